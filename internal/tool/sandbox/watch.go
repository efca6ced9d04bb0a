package sandbox

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The process-count watchdog runs in arbor, outside the sandboxes: one
// goroutine per Sandbox, while it has calls running, scans /proc every
// watchEvery and counts the processes of each call's PID namespace. A call
// past its limit has its namespace's init killed, which makes the kernel
// kill every process in the namespace: a fork bomb ends, the tree goes on.
// (As root RLIMIT_NPROC does not apply, and arbor's own binary is too
// heavy to start as a helper in front of every command.)

// watchEvery is how often the watchdog counts.
const watchEvery = 25 * time.Millisecond

// watched is a running call as the watchdog sees it.
type watched struct {
	ns       string // the PID namespace, as /proc/PID/ns/pid reads
	init     int    // the host pid of the namespace's init
	max      int
	exceeded int // the count that ended it; 0 while within the limit
}

// watcher owns the watchdog goroutine of a Sandbox.
type watcher struct {
	mu      sync.Mutex // guards calls and running
	calls   map[*watched]struct{}
	running bool
	wg      sync.WaitGroup // the goroutine, waited for by Sandbox.Close
}

// add starts watching w, and the goroutine when it is the first call.
func (wt *watcher) add(w *watched) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.calls == nil {
		wt.calls = map[*watched]struct{}{}
	}
	wt.calls[w] = struct{}{}
	if !wt.running {
		wt.running = true
		wt.wg.Go(wt.loop)
	}
}

// remove stops watching w and reports the count that ended it (0: none).
func (wt *watcher) remove(w *watched) int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	delete(wt.calls, w)
	return w.exceeded
}

// loop counts until no call is left.
func (wt *watcher) loop() {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for range t.C {
		wt.mu.Lock()
		if len(wt.calls) == 0 {
			wt.running = false
			wt.mu.Unlock()
			return
		}
		byNS := make(map[string]*watched, len(wt.calls))
		for w := range wt.calls {
			if w.exceeded == 0 {
				byNS[w.ns] = w
			}
		}
		wt.mu.Unlock()
		if len(byNS) == 0 {
			continue
		}
		counts := countByNS(byNS)
		for ns, n := range counts {
			w := byNS[ns]
			if n <= w.max {
				continue
			}
			_ = syscall.Kill(w.init, syscall.SIGKILL) // the namespace dies with its init
			wt.mu.Lock()
			w.exceeded = n
			wt.mu.Unlock()
		}
	}
}

// countByNS counts the processes of /proc in each namespace of interest.
func countByNS(interest map[string]*watched) map[string]int {
	counts := map[string]int{}
	ps, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range ps {
		ns, err := os.Readlink(p + "/ns/pid")
		if err != nil {
			continue // exited meanwhile
		}
		if _, ok := interest[ns]; ok {
			counts[ns]++
		}
	}
	return counts
}

// readInit reads bubblewrap's --info-fd JSON ({"child-pid": N}) from r
// and returns the namespace init's pid and its PID namespace.
func readInit(r *os.File) (pid int, ns string, ok bool) {
	defer r.Close()
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(bufio.NewReader(r)).Decode(&info); err != nil || info.ChildPID <= 0 {
		return 0, "", false
	}
	ns, err := os.Readlink("/proc/" + strconv.Itoa(info.ChildPID) + "/ns/pid")
	if err != nil {
		return 0, "", false
	}
	return info.ChildPID, ns, true
}
