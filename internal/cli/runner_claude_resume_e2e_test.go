package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// Claude Code nodes that continue their session: after a pause, for a
// synthesis, after arbor itself was stopped (see runner_claude_e2e_test.go
// for claudeEnv and servedSpend).

// TestClaudeCodeNodePauseResume pauses a node run by Claude Code while its
// Bash call runs, and resumes it once its process group has ended: the
// resumed turn continues the same Claude Code session (--resume: its
// first request holds the node's prompt and the interrupted call), gets
// the resume notice as a new user message, and completes the node. Both
// turns are charged once each.
func TestClaudeCodeNodePauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	served := &servedSpend{}
	var mu sync.Mutex
	var resumed llmtest.Request
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code as #2
			switch last := req.LastUserText(); {
			case strings.Contains(last, "You were paused and have now been resumed"):
				mu.Lock()
				resumed = req
				mu.Unlock()
				return served.serve(req, treetest.Calls(treetest.Call("mcp__arbor__complete", map[string]any{"result": "finished after the resume"})))
			case treetest.Turns(req) == 0:
				return served.serve(req, treetest.Calls(treetest.Call("Bash", map[string]any{
					"command": "echo $$ > sleep.pid; exec sleep 300", "description": "wait", "timeout": 600000})))
			}
			return served.serve(req, llmtest.Turn{Text: "Done."})
		case treetest.NodeOf(req) == 1:
			switch treetest.Turns(req) {
			case 0:
				return treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Sleep, then finish", "prompt": "Sleep first.", "runner": "claude-code"}))
			case 1: // wait (in the root's own shell) until #2's command runs
				return treetest.Calls(treetest.Call("shell", map[string]any{
					"command": "while ! grep -q . sleep.pid 2>/dev/null; do sleep 0.1; done", "timeout": 600}))
			case 2:
				return treetest.Calls(treetest.Call("pause", map[string]any{"id": "#2"}))
			case 3: // the pause ends #2's process group, and the command with it
				return treetest.Calls(treetest.Call("shell", map[string]any{
					"command": "while kill -0 $(cat sleep.pid) 2>/dev/null; do sleep 0.1; done; echo gone", "timeout": 600}))
			case 4:
				return treetest.Calls(treetest.Call("resume", map[string]any{"id": "#2"}))
			case 5:
				return treetest.Complete("draft")
			default:
				_, res, _ := strings.Cut(req.LastUserText(), "(complete) Sleep, then finish\n")
				res, _, _ = strings.Cut(res, "\n")
				return treetest.Complete("ROOT: " + res)
			}
		}
		return served.serve(req, llmtest.Turn{Text: "ok"})
	})
	t.Cleanup(srv.Close)
	model := claudeEnv(t, e, srv.URL)

	o := e.run("run", "--yes", "--model", model, "Pause and resume a Claude Code node")
	if o.code != 0 {
		t.Fatalf("run: %d\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	if got := strings.TrimSpace(o.stdout); got != "ROOT: finished after the resume" {
		t.Fatalf("stdout %q\nstderr: %s", got, o.stderr)
	}
	mu.Lock()
	req := resumed
	mu.Unlock()
	// The same session: the resumed turn's request carries the first turn.
	if len(req.Messages) == 0 || !strings.Contains(req.Messages[0].Text(), "Sleep first.") || treetest.Turns(req) < 1 {
		t.Fatalf("the resumed turn did not continue #2's Claude Code session: %d messages, first %q", len(req.Messages), firstText(req))
	}
	served.check(t, e.show(runID(t, o.stderr)+".2").Session, "")
}

// TestClaudeCodeNodeSynthesizes runs a Claude Code node that spawns a
// child (run by arbor's loop) and completes a draft: when the child has
// ended, its synthesis message comes to Claude Code as a new user
// message in the same session (--resume), and the result it completes
// with is the node's.
func TestClaudeCodeNodeSynthesizes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	served := &servedSpend{}
	var mu sync.Mutex
	var synth llmtest.Request
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code as #2
			last := req.LastUserText()
			switch {
			case strings.Contains(last, "All 1 of your child tasks have ended"):
				mu.Lock()
				synth = req
				mu.Unlock()
				_, leaf, _ := strings.Cut(last, "(complete) Look it up\n")
				leaf, _, _ = strings.Cut(leaf, "\n")
				return served.serve(req, treetest.Calls(treetest.Call("mcp__arbor__complete", map[string]any{"result": "synthesized: " + leaf})))
			case strings.Contains(last, "recorded"):
				return served.serve(req, llmtest.Turn{Text: "Done."})
			case treetest.Turns(req) == 0:
				return served.serve(req, treetest.Calls(treetest.Call("mcp__arbor__spawn", map[string]any{"goal": "Look it up", "prompt": "Find the answer."})))
			}
			return served.serve(req, treetest.Calls(treetest.Call("mcp__arbor__complete", map[string]any{"result": "a draft"})))
		case treetest.NodeOf(req) == 3:
			return treetest.Complete("the answer is 42")
		case treetest.NodeOf(req) == 1:
			switch treetest.Turns(req) {
			case 0:
				return treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Delegate", "prompt": "Split the work.", "runner": "claude-code"}))
			case 1:
				return treetest.Complete("draft")
			default:
				_, res, _ := strings.Cut(req.LastUserText(), "(complete) Delegate\n")
				res, _, _ = strings.Cut(res, "\n")
				return treetest.Complete("ROOT: " + res)
			}
		}
		return served.serve(req, llmtest.Turn{Text: "ok"})
	})
	t.Cleanup(srv.Close)
	model := claudeEnv(t, e, srv.URL)

	o := e.run("run", "--yes", "--model", model, "Let a Claude Code node synthesize")
	if o.code != 0 {
		t.Fatalf("run: %d\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	if got := strings.TrimSpace(o.stdout); got != "ROOT: synthesized: the answer is 42" {
		t.Fatalf("stdout %q\nstderr: %s", got, o.stderr)
	}
	mu.Lock()
	req := synth
	mu.Unlock()
	// The same session: the synthesis request carries the first turn
	// (its prompt, spawn, the draft and the text that ended it).
	if len(req.Messages) == 0 || !strings.Contains(req.Messages[0].Text(), "Split the work.") || treetest.Turns(req) < 3 {
		t.Fatalf("the synthesis did not continue #2's Claude Code session: %d turns, first %q", treetest.Turns(req), firstText(req))
	}
	served.check(t, e.show(runID(t, o.stderr)+".2").Session, "")
}

func firstText(req llmtest.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[0].Text()
}

// TestClaudeCodeNodeContinuesAfterArborResume interrupts arbor run
// (Ctrl-C) while Claude Code runs #2's first turn (its Bash command), then
// continues the run with arbor resume: #2's Claude Code session, already
// begun, is resumed (Claude Code refuses to begin a session id twice) and
// told what happened, and #2 completes. Both turns are charged.
func TestClaudeCodeNodeContinuesAfterArborResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	served := &servedSpend{}
	// #2's Bash command writes to the fifo once it runs: Claude Code has
	// then taken in its first response whole (and will report its usage).
	fifo := filepath.Join(e.workspace, "running")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var continued llmtest.Request
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code as #2
			switch last := req.LastUserText(); {
			case strings.Contains(last, "has now resumed it"):
				mu.Lock()
				continued = req
				mu.Unlock()
				return served.serve(req, treetest.Calls(treetest.Call("mcp__arbor__complete", map[string]any{"result": "finished after arbor resume"})))
			case treetest.Turns(req) == 0:
				return served.serve(req, treetest.Calls(treetest.Call("Bash", map[string]any{
					"command": "echo run > running; exec sleep 300", "description": "wait", "timeout": 600000})))
			}
			return served.serve(req, llmtest.Turn{Text: "Done."})
		case treetest.NodeOf(req) == 1:
			switch treetest.Turns(req) {
			case 0:
				return treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Outlive arbor", "prompt": "Work through a restart.", "runner": "claude-code"}))
			case 1:
				return treetest.Complete("draft")
			default:
				_, res, _ := strings.Cut(req.LastUserText(), "(complete) Outlive arbor\n")
				res, _, _ = strings.Cut(res, "\n")
				return treetest.Complete("ROOT: " + res)
			}
		}
		return served.serve(req, llmtest.Turn{Text: "ok"})
	})
	t.Cleanup(srv.Close)
	model := claudeEnv(t, e, srv.URL)

	c := e.cmd(context.Background(), "run", "--yes", "--model", model, "Continue a Claude Code node after a restart")
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	running := make(chan struct{})
	go func() {
		_, _ = os.ReadFile(fifo) // returns once a writer has come and gone
		close(running)
	}()
	select {
	case <-running: // #2's command runs
	case err := <-exited:
		if f, ferr := os.OpenFile(fifo, os.O_WRONLY, 0); ferr == nil {
			f.Close() // let the reader go
		}
		t.Fatalf("arbor run ended before #2's command ran: %v\n%s", err, errb.String())
	}
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; c.ProcessState.ExitCode() != 130 {
		t.Fatalf("arbor run after Ctrl-C: %v\n%s", err, errb.String())
	}
	id := runID(t, errb.String())
	o := e.run("resume", id)
	if o.code != 0 || strings.TrimSpace(o.stdout) != "ROOT: finished after arbor resume" {
		t.Fatalf("resume: %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	mu.Lock()
	req := continued
	mu.Unlock()
	if len(req.Messages) == 0 || !strings.Contains(req.Messages[0].Text(), "Work through a restart.") {
		t.Fatalf("the continued turn did not resume #2's Claude Code session: first message %q", firstText(req))
	}
	served.check(t, e.show(id+".2").Session, "")
}
