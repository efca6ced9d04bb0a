package cli_test

import (
	"strings"
	"testing"
)

// TestHeadlessThatCannotStartLeavesNoRun: `arbor headless` with no model
// configured exits 2, as arbor run does, and stores no run; before, it
// exited 1 and left a run "headless session …" with no model, shown
// interrupted, whose resume hint led nowhere.
func TestHeadlessThatCannotStartLeavesNoRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.run("headless")
	if o.code != 2 || !strings.Contains(o.stderr, "no model configured") {
		t.Fatalf("headless without a model: exit %d\n%s", o.code, o.stderr)
	}
	if runs := e.run("runs"); runs.code != 0 || strings.Count(strings.TrimSpace(runs.stdout), "\n") != 0 {
		t.Fatalf("runs after a headless that could not start:\n%s%s", runs.stdout, runs.stderr)
	}
}
