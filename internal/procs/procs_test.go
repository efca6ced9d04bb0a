package procs_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/procs"
)

// atStart is the test process's GOMAXPROCS before TestMain: the runtime's
// default, as a child with the same environment starts with it.
var atStart = runtime.GOMAXPROCS(0)

// TestMain doubles as the child of TestInitialiser: with PROCS_CHILD set it
// prints the GOMAXPROCS that package initialisation left and exits.
func TestMain(m *testing.M) {
	if os.Getenv("PROCS_CHILD") != "" {
		fmt.Println(runtime.GOMAXPROCS(0))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestInitialiser starts this test binary as `… headless` and as
// `… run`: the package's initialiser fixes one processor for the first
// only, and never over the user's GOMAXPROCS. ("GOMAXPROCS=" is unset
// for the runtime and for One; without it the child keeps this process's
// environment, so it starts with atStart.)
func TestInitialiser(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		arg, env string
		want     int
	}{
		{"headless", "GOMAXPROCS=", 1},
		{"headless", "GOMAXPROCS=3", 3},
		{"run", "", atStart},
		{"run", "GOMAXPROCS=3", 3},
	} {
		cmd := exec.Command(os.Args[0], c.arg)
		cmd.Env = append(os.Environ(), "PROCS_CHILD=1")
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", c.arg, err)
		}
		if got := strings.TrimSpace(string(out)); got != fmt.Sprint(c.want) {
			t.Errorf("%s with %q: GOMAXPROCS %s after initialisation, want %d", c.arg, c.env, got, c.want)
		}
	}
}

// TestOne is not parallel: it changes the test process's GOMAXPROCS
// (and restores it) while the parallel tests wait.
func TestOne(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	runtime.GOMAXPROCS(2)
	procs.One(func(string) string { return "2" })
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("GOMAXPROCS set by the user: %d, want it kept (2)", got)
	}
	procs.One(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS unset: %d, want 1", got)
	}
}

func TestHeadless(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]bool{
		"arbor headless":                 true,
		"arbor headless --protocol x":    true,
		"arbor":                          false,
		"arbor run headless":             false,
		"arbor --config c.yaml headless": false, // the command's own call
	} {
		if got := procs.Headless(strings.Fields(args)); got != want {
			t.Errorf("Headless(%q) = %v, want %v", args, got, want)
		}
	}
}
