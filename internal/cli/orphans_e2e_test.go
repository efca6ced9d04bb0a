//go:build linux

package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
)

// osProc is a process found in /proc.
type osProc struct {
	pid, ppid, pgid int
	comm            string
}

// procs returns the processes that have not exited (zombies left out) and
// whose command line or environment contains needle.
func procs(needle string) []osProc {
	paths, _ := filepath.Glob("/proc/[0-9]*")
	var out []osProc
	for _, dir := range paths {
		env, _ := os.ReadFile(filepath.Join(dir, "environ"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		if !bytes.Contains(env, []byte(needle)) && !bytes.Contains(cmdline, []byte(needle)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		f := strings.Fields(s[end+1:]) // state ppid pgrp …
		if open < 0 || len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		p := osProc{comm: s[open+1 : end]}
		p.pid, _ = strconv.Atoi(filepath.Base(dir))
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgid, _ = strconv.Atoi(f[2])
		out = append(out, p)
	}
	return out
}

// waitProcs polls until cond holds for the processes procs(needle) finds.
// The deadline only bounds a failing test.
func waitProcs(t *testing.T, needle, what string, cond func([]osProc) bool) []osProc {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps := procs(needle)
		if cond(ps) {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s; processes: %+v", what, ps)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKillLeavesNoToolProcess kills arbor while a shell call runs a
// background and a foreground sleep, and checks that no process of the
// call's group survives. After SIGKILL: at once (Pdeathsig and the
// reaper) and, when the reaper was killed too, after `arbor resume` (the
// group recorded in the call's intent); either way the model is told the
// call was interrupted. After SIGTERM: the cancelled call killed its group
// before arbor exited.
func TestKillLeavesNoToolProcess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		sig        syscall.Signal
		killReaper bool
	}{
		{"ReaperKillsTheGroup", syscall.SIGKILL, false},
		{"ResumeKillsTheGroup", syscall.SIGKILL, true},
		{"TermCancelsTheCall", syscall.SIGTERM, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			b := make([]byte, 8)
			_, _ = rand.Read(b)
			marker := "ARBOR_ORPHAN_MARKER=" + hex.EncodeToString(b)
			e.vars = append(e.vars, marker)
			fifo := filepath.Join(e.home, "started")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			srv := llmtest.NewServer(
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{
					"command": "sleep 300 & echo $$ > " + fifo + "; sleep 300; echo never"}}}},
				llmtest.Turn{Text: "The command was interrupted; not repeating it.", Expect: "interrupted"},
			)
			defer srv.Close()
			model := e.useProvider("anthropic", srv.URL)

			c := e.cmd(context.Background(), "run", "--model", model, "--yes", "sleep a while")
			var errb bytes.Buffer
			c.Stderr = &errb
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			arbor := c.Process.Pid
			data, err := os.ReadFile(fifo) // blocks until the tool runs
			if err != nil {
				t.Fatal(err)
			}
			pgid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("the command said %q", data)
			}
			t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			inGroup := func(ps []osProc) (n int) {
				for _, p := range ps {
					if p.pgid == pgid {
						n++
					}
				}
				return n
			}
			waitProcs(t, marker, "want bash and two sleeps in the tool's group", func(ps []osProc) bool { return inGroup(ps) == 3 })

			if tc.killReaper {
				// As when the whole process tree is SIGKILLed at once: the
				// reaper is gone before it could act.
				reapers := waitProcs(t, "# arbor tool reaper", "want arbor's reaper", func(ps []osProc) bool {
					for _, p := range ps {
						if p.ppid == arbor {
							return true
						}
					}
					return false
				})
				for _, p := range reapers {
					if p.ppid == arbor {
						_ = syscall.Kill(p.pid, syscall.SIGKILL)
					}
				}
			}
			if err := c.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			_ = c.Wait()

			id := runID(t, errb.String())
			s := e.show(rootSession(id))
			if tc.sig == syscall.SIGTERM {
				if len(s.Intents) != 1 || s.Intents[0].Status != store.IntentFinished || !strings.Contains(s.Intents[0].Result, "killed") {
					t.Fatalf("after SIGTERM: intents %+v, want the call finished as cancelled", s.Intents)
				}
				waitProcs(t, marker, "want no process of the tool's group after arbor exited", func(ps []osProc) bool {
					return inGroup(ps) == 0
				})
				return
			}
			if len(s.Intents) != 1 || s.Intents[0].Status != store.IntentStarted || s.Intents[0].PGID != pgid {
				t.Fatalf("after kill: intents %+v, want one started with pgid %d", s.Intents, pgid)
			}
			if tc.killReaper {
				// Pdeathsig killed bash, the direct child; its sleeps live on
				// until the resume.
				waitProcs(t, marker, "want bash gone and the two sleeps alive", func(ps []osProc) bool {
					return inGroup(ps) == 2
				})
			} else {
				waitProcs(t, marker, "want no process of the tool's group after the kill", func(ps []osProc) bool {
					return inGroup(ps) == 0
				})
			}

			o := e.run("resume", id)
			if o.code != 0 || !strings.Contains(o.stdout, "not repeating") {
				t.Fatalf("resume: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
			}
			if ps := procs(marker); inGroup(ps) != 0 {
				t.Fatalf("processes of the tool's group alive after the resume: %+v", ps)
			}
			s = e.show(rootSession(id))
			res := s.Messages[2].Message.Parts[0].ToolResult
			if res == nil || !strings.HasPrefix(res.Content, "interrupted") {
				t.Fatalf("tool result after resume: %+v", s.Messages[2].Message)
			}
			killed := strings.Contains(res.Content, "processes it left running were killed")
			if killed != tc.killReaper {
				t.Fatalf("result %q: says killed = %v, want %v", res.Content, killed, tc.killReaper)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Fatal(fmt.Sprintf("the shell tool must not run again; %d model requests", n))
			}
		})
	}
}
