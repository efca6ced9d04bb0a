package worker

import (
	"testing"

	"github.com/arbor-run/arbor/internal/tree"
)

// TestForgetLeavesAnotherDrivesEntry: a drive of a run ends only what it
// registered. The same run can reach a worker twice; the second
// drive fails on the lease its own process holds, and taking the first
// drive's entry with it left answers sent through the database with no
// worker to deliver them to (TestClusterSurvivesAKilledWorker, under load).
func TestForgetLeavesAnotherDrivesEntry(t *testing.T) {
	t.Parallel()
	first, second := new(tree.Engine), new(tree.Engine)
	w := &Worker{runs: map[string]*held{"r": {queue: "default", engine: first}}}

	w.forget("r", second, false) // the failed second drive
	if h := w.runs["r"]; h == nil || h.engine != first {
		t.Fatalf("a second drive's end took the first drive's entry: %+v", h)
	}
	w.forget("r", first, true) // the first drive let go at a stop
	if h := w.runs["r"]; h == nil || h.engine != nil {
		t.Fatalf("a let-go run's entry: %+v, want kept without its engine", h)
	}
	w.forget("r", second, false)
	if h := w.runs["r"]; h == nil {
		t.Fatal("a drive that never registered removed a let-go run's entry")
	}
	w.runs["r"].engine = second
	w.forget("r", second, false) // a drive that ends
	if _, ok := w.runs["r"]; ok {
		t.Fatal("a drive's end left its entry")
	}
}
