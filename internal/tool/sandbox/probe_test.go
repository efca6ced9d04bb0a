package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestProbeCache: a successful probe is remembered and the next detect
// under the same conditions runs none; a failed one is not remembered; a
// cache that names other conditions (another boot, bwrap, sysctl) runs
// the probe again.
func TestProbeCache(t *testing.T) {
	t.Parallel()
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed: detect fails before it probes")
	}
	if probeKey(bw) == "" {
		t.Skip("no /proc/sys/kernel/random/boot_id or /proc/self/ns/user here: nothing is cached")
	}
	cache := filepath.Join(t.TempDir(), "arbor", "sandbox-probe")
	runs := 0
	fail := errors.New("no namespaces here")
	failing := func(string) error { runs++; return fail }
	working := func(string) error { runs++; return nil }

	if _, err := detect(cache, failing); !errors.Is(err, fail) || runs != 1 {
		t.Fatalf("failing probe: %v after %d runs", err, runs)
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed probe was remembered: %v", err)
	}
	for i := range 2 {
		got, err := detect(cache, working)
		if err != nil || got != bw {
			t.Fatalf("detect %d = %q, %v", i, got, err)
		}
	}
	if runs != 2 {
		t.Fatalf("%d probes for a failure and two detects, want 2: the second detect must use the cache", runs)
	}

	// Other conditions: the cached key no longer matches.
	if err := os.WriteFile(cache, []byte("0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := detect(cache, working); err != nil || runs != 3 {
		t.Fatalf("detect with a stale cache: %v after %d runs, want a probe", err, runs)
	}
	if _, err := detect("", working); err != nil || runs != 4 {
		t.Fatalf("detect without a cache dir: %v after %d runs, want a probe", err, runs)
	}
}
