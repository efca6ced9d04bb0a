package protocol

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestQuietTrimsOnceAfterIdle(t *testing.T) {
	trimmed := make(chan struct{}, 4)
	q := NewQuiet(0, func() { trimmed <- struct{}{} })
	q.Idle()
	select {
	case <-trimmed:
	case <-time.After(30 * time.Second):
		t.Fatal("no trim after Idle")
	}
	q.Close()
	if n := len(trimmed); n != 0 {
		t.Fatalf("%d more trims after one Idle", n)
	}
}

func TestQuietInputCancelsTheTrim(t *testing.T) {
	var n atomic.Int32
	q := NewQuiet(time.Hour, func() { n.Add(1) })
	q.Idle()
	q.Busy()
	q.Idle() // a second spell re-arms
	q.Idle()
	q.Close() // returns: no armed timer is left counted
	if got := n.Load(); got != 0 {
		t.Fatalf("%d trims ran, want 0: input and Close came first", got)
	}
	q.Idle() // after Close: nothing is armed
	q.Close()
}

func TestQuietCloseWaitsForARunningTrim(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var released atomic.Bool
	q := NewQuiet(0, func() {
		close(started)
		<-release
	})
	q.Idle()
	<-started
	closed := make(chan struct{})
	go func() {
		q.Close()
		if !released.Load() {
			t.Error("Close returned while the trim was still running")
		}
		close(closed)
	}()
	released.Store(true)
	close(release)
	<-closed
}

var sink [][]byte

// freshProcess is set in the environment of the process
// TestFreeGarbageCollectsOnlyWhenItIsWorth runs its checks in.
const freshProcess = "ARBOR_TEST_FREE_GARBAGE"

// TestFreeGarbageCollectsOnlyWhenItIsWorth checks FreeGarbage against the
// heap of a fresh process (the test binary run again for this test
// alone): in one where other tests ran, and ran again with -count, their
// garbage and the free pages the heap keeps decide for it (the check of
// "no garbage" failed in 5 of 12 runs of -count 4).
func TestFreeGarbageCollectsOnlyWhenItIsWorth(t *testing.T) {
	if os.Getenv(freshProcess) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFreeGarbageCollectsOnlyWhenItIsWorth$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), freshProcess+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestFreeGarbageCollectsOnlyWhenItIsWorth") {
			t.Fatalf("in a fresh process: %v\n%s", err, out)
		}
		return
	}
	debug.FreeOSMemory() // a collection, and every free page returned
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	FreeGarbage() // nothing allocated since, nothing free kept
	runtime.ReadMemStats(&after)
	if after.NumGC != before.NumGC {
		t.Fatalf("FreeGarbage collected with no garbage (%d → %d collections)", before.NumGC, after.NumGC)
	}
	for range 40 { // 2.5 MiB: garbage, and below the collector's own 4 MiB goal
		sink = append(sink, make([]byte, 64<<10))
	}
	sink = nil
	runtime.ReadMemStats(&before)
	FreeGarbage()
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC {
		t.Fatal("FreeGarbage did not collect 2.5 MiB of garbage")
	}
	if after.HeapReleased <= before.HeapReleased {
		t.Fatalf("heap released to the system: %d KiB before, %d KiB after", before.HeapReleased>>10, after.HeapReleased>>10)
	}
	// Garbage already collected leaves free pages the heap keeps: worth
	// a trim too (the background scavenger returns them only slowly).
	for range 256 { // 16 MiB
		sink = append(sink, make([]byte, 64<<10))
	}
	sink = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	FreeGarbage()
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC || after.HeapReleased <= before.HeapReleased {
		t.Fatalf("FreeGarbage left %d KiB of free pages: %d → %d collections, %d → %d KiB released",
			(before.HeapIdle-before.HeapReleased)>>10, before.NumGC, after.NumGC, before.HeapReleased>>10, after.HeapReleased>>10)
	}
}
