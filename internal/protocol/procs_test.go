package protocol_test

import (
	"runtime"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol"
)

// TestOneProc is not parallel: it changes the test process's GOMAXPROCS
// (and restores it) while the parallel tests wait.
func TestOneProc(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	runtime.GOMAXPROCS(2)
	protocol.OneProc(func(string) string { return "2" })
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("GOMAXPROCS set by the user: %d, want it kept (2)", got)
	}
	protocol.OneProc(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS unset: %d, want 1", got)
	}
}
