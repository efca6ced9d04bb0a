package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// threeLevels is a tree of six nodes: the root splits in two, the first
// child splits again; leaves record their work with a shell command.
func threeLevels(log string) treetest.ByGoal {
	leaf := func(name string) []llmtest.Turn {
		return []llmtest.Turn{
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo " + name + " >> " + log})),
			treetest.Complete("result of " + name),
		}
	}
	return treetest.ByGoal{
		"build the thing": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "left", "prompt": "p"}), treetest.Call("spawn", map[string]any{"goal": "right", "prompt": "p"})),
			treetest.Complete("root draft"),
			treetest.Complete("ROOT: left and right are done"),
		},
		"left": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "left-a", "prompt": "p"}), treetest.Call("spawn", map[string]any{"goal": "left-b", "prompt": "p"})),
			treetest.Complete("left draft"),
			treetest.Complete("left synthesized"),
		},
		"right": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "right-a", "prompt": "p"})),
			treetest.Complete("right draft"),
			treetest.Complete("right synthesized"),
		},
		"left-a":  leaf("left-a"),
		"left-b":  leaf("left-b"),
		"right-a": leaf("right-a"),
	}
}

// TestCrashAndResumeThreeLevels SIGKILLs `arbor run` at several points of a
// three-level tree, resumes it each time, and checks that every node
// completed exactly once, no leaf's work ran twice, and the result is right.
func TestCrashAndResumeThreeLevels(t *testing.T) {
	t.Parallel()
	for _, killAt := range [][]int{{1}, {3, 7}, {5, 9, 12}, {2, 4, 6, 8, 10, 13}} {
		t.Run(fmt.Sprint(killAt), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			log := filepath.Join(e.home, "done.log")
			srv := llmtest.NewServerFunc(treetest.GoalResponder(threeLevels(log)))
			defer srv.Close()
			model := e.useProvider("anthropic", srv.URL)

			args := []string{"run", "--model", model, "--yes", "build the thing"}
			run := ""
			for _, k := range killAt {
				if killed, stderr := e.killAt(srv, k, args...); !killed {
					t.Fatalf("arbor %v ended before model request %d:\n%s", args, k, stderr)
				} else if run == "" {
					run = runID(t, stderr)
					args = []string{"resume", "--yes", run}
				}
			}
			o := e.run(args...)
			defer func() {
				if t.Failed() {
					t.Logf("tree:\n%s", e.run("tree", run).stdout)
					for id := 1; id <= 6; id++ {
						t.Logf("session #%d:\n%s", id, e.run("sessions", "show", fmt.Sprintf("%s.%d", run, id)).stdout)
					}
				}
			}()
			if o.code != 0 {
				t.Fatalf("final resume: exit %d\n%s", o.code, o.stderr)
			}
			if strings.TrimSpace(o.stdout) != "ROOT: left and right are done" {
				t.Fatalf("stdout %q\n%s", o.stdout, o.stderr)
			}
			b, _ := os.ReadFile(log)
			for _, leaf := range []string{"left-a", "left-b", "right-a"} {
				if n := strings.Count(string(b), leaf+"\n"); n > 1 {
					t.Fatalf("%s ran %d times:\n%s", leaf, n, b)
				}
			}
			// Parents complete twice (draft, synthesis), leaves once. Ids
			// depend on which parent spawned first, so go by goal.
			var shown treeShown
			if err := json.Unmarshal([]byte(e.run("tree", run, "--json").stdout), &shown); err != nil || len(shown.Nodes) != 6 {
				t.Fatalf("tree --json: %v, %d nodes", err, len(shown.Nodes))
			}
			want := map[string]int{"build the thing": 2, "left": 2, "right": 2, "left-a": 1, "left-b": 1, "right-a": 1}
			for _, n := range shown.Nodes {
				s := e.show(n.SessionID)
				completes := 0
				for _, m := range s.Messages {
					for _, c := range m.Message.ToolCalls() {
						if c.Name == "complete" {
							completes++
						}
					}
				}
				if completes != want[n.Goal] {
					t.Fatalf("#%d %s called complete %d times, want %d", n.ID, n.Goal, completes, want[n.Goal])
				}
			}
			o = e.run("tree", run, "--json")
			for _, state := range []string{"pending", "active", "waiting", "synthesizing", "failed", "cancelled"} {
				if strings.Contains(o.stdout, `"state": "`+state+`"`) {
					t.Fatalf("a node is %s after the run:\n%s", state, o.stdout)
				}
			}
		})
	}
}

// killAt runs arbor with args and SIGKILLs it once the scripted server
// has received n model requests; killed is false when arbor ended first.
// It returns arbor's stderr.
func (e *env) killAt(srv *llmtest.Server, n int, args ...string) (killed bool, stderr string) {
	e.t.Helper()
	p := e.start(args...)
	reached := make(chan struct{})
	go func() { srv.WaitRequests(n); close(reached) }()
	select {
	case <-reached:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		killed = true
	case <-p.exited:
	}
	return killed, p.stderr.String()
}
