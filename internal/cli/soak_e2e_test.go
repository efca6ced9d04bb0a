package cli_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

var (
	soak     = flag.Int("soak", 0, "TestSoakKillResume: iterations of SIGKILL at random points and resume (0 = skip)")
	soakSeed = flag.Uint64("soak-seed", 0, "TestSoakKillResume: random seed (0 = from the clock)")
)

const soakLeaves = 4

// twoLevels is a root that fans out to soakLeaves leaves; each leaf records
// its work with a shell command, then completes with its own result.
func twoLevels(log string) treetest.ByGoal {
	var spawns []llmtest.ToolCall
	s := treetest.ByGoal{}
	for i := range soakLeaves {
		name := fmt.Sprintf("leaf-%d", i)
		spawns = append(spawns, treetest.Call("spawn", map[string]any{"goal": name, "prompt": "p"}))
		s[name] = []llmtest.Turn{
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo " + name + " >> " + log})),
			treetest.Complete("RESULT-OF-" + name),
		}
	}
	s["soak the tree"] = []llmtest.Turn{treetest.Calls(spawns...), treetest.Complete("root draft"), treetest.Complete("ROOT DONE")}
	return s
}

// TestSoakKillResume SIGKILLs `arbor run` on a two-level tree at random
// points (random model-request counts, one to three kills a run), resumes
// until the run ends, and checks: the run completes with the root's
// result; every node completed exactly once (the root twice: draft and
// synthesis); the root synthesized once, seeing every leaf's result
// exactly once; no leaf's work ran twice; no node is left unfinished.
// It runs only with -soak N:
//
//	go test ./internal/cli -run TestSoakKillResume -count=1 -soak 10
func TestSoakKillResume(t *testing.T) {
	if *soak <= 0 {
		t.Skip("soak test: run with -soak N")
	}
	seed := *soakSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -soak-seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	kills := 0
	for i := range *soak {
		var points []int
		for k, n := 0, 1+rng.IntN(3); len(points) < n; {
			k += 1 + rng.IntN(5)
			points = append(points, k)
		}
		kills += soakOnce(t, i, points)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d iterations, %d kills, every result exactly once", *soak, kills)
}

// soakOnce runs the tree once, killing arbor when the model server has
// seen each of points requests (a point the run never reaches is skipped:
// it ended first), and checks the outcome. It returns the kills made.
func soakOnce(t *testing.T, iter int, points []int) int {
	t.Helper()
	e := newEnv(t)
	log := filepath.Join(e.home, "done.log")
	srv := llmtest.NewServerFunc(treetest.GoalResponder(twoLevels(log)))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	args := []string{"run", "--model", model, "--yes", "soak the tree"}
	run, kills := "", 0
	for _, k := range points {
		// A run that ended before request k leaves nothing to kill.
		killed, stderr := e.killAt(srv, k, args...)
		if killed {
			kills++
		}
		if run == "" {
			run = runID(t, stderr)
			args = []string{"resume", "--yes", run}
		}
	}
	o := e.run(args...)
	fail := func(format string, a ...any) {
		t.Helper()
		t.Logf("iteration %d, kills at %v:\n%s", iter, points, e.run("tree", run).stdout)
		t.Fatalf(format, a...)
	}
	if o.code != 0 || strings.TrimSpace(o.stdout) != "ROOT DONE" {
		fail("final %v: exit %d, stdout %q\n%s", args, o.code, o.stdout, o.stderr)
	}
	b, _ := os.ReadFile(log)
	for i := range soakLeaves {
		if n := strings.Count(string(b), fmt.Sprintf("leaf-%d\n", i)); n > 1 {
			fail("leaf-%d's work ran %d times", i, n)
		}
	}
	var shown treeShown
	if err := json.Unmarshal([]byte(e.run("tree", run, "--json").stdout), &shown); err != nil || len(shown.Nodes) != 1+soakLeaves {
		fail("tree --json: %v, %d nodes", err, len(shown.Nodes))
	}
	for _, n := range shown.Nodes {
		if n.State != "complete" {
			fail("#%d %s is %s", n.ID, n.Goal, n.State)
		}
		s := e.show(n.SessionID)
		completes, syntheses := 0, 0
		var synthesis string
		for _, m := range s.Messages {
			for _, c := range m.Message.ToolCalls() {
				if c.Name == "complete" {
					completes++
				}
			}
			if txt := m.Message.Text(); strings.Contains(txt, "of your child tasks have ended") {
				syntheses++
				synthesis = txt
			}
		}
		want := 1
		if n.ID == 1 {
			want = 2
			if syntheses != 1 {
				fail("the root synthesized %d times", syntheses)
			}
			for i := range soakLeaves {
				if c := strings.Count(synthesis, fmt.Sprintf("RESULT-OF-leaf-%d\n", i)); c != 1 {
					fail("the root's synthesis shows leaf-%d's result %d times:\n%s", i, c, synthesis)
				}
			}
		}
		if completes != want {
			fail("#%d %s called complete %d times, want %d", n.ID, n.Goal, completes, want)
		}
	}
	return kills
}
