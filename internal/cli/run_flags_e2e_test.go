package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesBadFlagsAndPlans: flag values that make no sense, a plan
// file that is missing, a directory, not text or over 1 MiB, and a dollar
// budget on a model without a price are refused before anything runs,
// with exit 2.
func TestRunRefusesBadFlagsAndPlans(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	model := e.useProvider("anthropic", "http://127.0.0.1:1") // never called
	if err := os.Mkdir(filepath.Join(e.workspace, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"huge.md":   bytes.Repeat([]byte("a plan\n"), 1<<20/7+1), // just over 1 MiB
		"binary.md": {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0},
	} {
		if err := os.WriteFile(filepath.Join(e.workspace, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-parallel", "0", "hi"}, "--max-parallel must be at least 1"},
		{[]string{"run", "--max-parallel", "-3", "hi"}, "--max-parallel must be at least 1"},
		{[]string{"run", "--budget", "-1", "hi"}, "--budget must not be negative"},
		{[]string{"run", "--max-tokens", "-5", "hi"}, "--max-tokens must not be negative"},
		{[]string{"run", "--node-timeout", "-1s", "hi"}, "--node-timeout must not be negative"},
		{[]string{"run", "plan.md"}, "plan file plan.md"},
		{[]string{"run", "plans"}, "plan file plans is a directory"},
		{[]string{"run", "huge.md"}, "plan file huge.md is larger than 1 MiB"},
		{[]string{"run", "binary.md"}, "plan file binary.md is not text"},
		{[]string{"run", "--budget", "0.0001", "hi"}, "price of model anthropic/claude-test is unknown"},
		{[]string{"resume", "--budget", "-2", "some-run"}, "--budget must not be negative"},
		{[]string{"run", "--model", "script:no-such.yaml", "hi"}, "--model script:no-such.yaml"},
		{[]string{"mcp", "--budget", "NaN"}, "--budget must be a finite number"},
		{[]string{"mcp", "--budget", "-1"}, "--budget must not be negative"},
		{[]string{"mcp", "--max-parallel", "0"}, "--max-parallel must be at least 1"},
		{[]string{"mcp", "--node-timeout", "-1s"}, "--node-timeout must not be negative"},
		{[]string{"mcp", "--budget", "0.0001"}, "price of model anthropic/claude-test is unknown"},
		{[]string{"run", "--budget", "NaN", "hi"}, "--budget must be a finite number of dollars"},
		{[]string{"run", "--budget", "+Inf", "hi"}, "--budget must be a finite number of dollars"},
		{[]string{"run", "--budget", "-Inf", "hi"}, "--budget must be a finite number of dollars"},
		{[]string{"resume", "--budget", "nan", "some-run"}, "--budget must be a finite number of dollars"},
		{[]string{"resume", "--budget", "inf", "some-run"}, "--budget must be a finite number of dollars"},
		{[]string{"run", "--node-models", "nope", "hi"}, `"nope" is not in the config's node_models`},
		{[]string{"resume"}, "accepts 1 arg"},
		{[]string{"tree"}, "arg"},
	} {
		o := e.run(append([]string{"--model", model}, c.args...)...)
		if o.code != 2 || !strings.Contains(o.stderr, c.want) {
			t.Errorf("arbor %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), o.code, o.stderr, c.want)
		}
	}
	if o := e.run("runs"); o.code != 0 || strings.Count(strings.TrimSpace(o.stdout), "\n") != 0 {
		t.Fatalf("nothing should have run: %d %q", o.code, o.stdout)
	}
}
