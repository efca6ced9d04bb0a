package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The watchdog runs in arbor, outside the sandboxes: one goroutine per
// Sandbox, while it has calls running, scans /proc every watchEvery and
// counts the processes of each call's PID namespace and the memory they
// hold of their own (resident and not shared with a file: what the kernel
// would have to find room for). A call past either limit has its
// namespace's init killed, which makes the kernel kill every process in
// the namespace: a fork bomb or a runaway allocation ends, the tree goes
// on. (As root RLIMIT_NPROC does not apply, RLIMIT_AS breaks programs that
// reserve address space they never touch, and neither bounds a call's
// processes together.)

// watchEvery is how often the watchdog counts.
const watchEvery = 25 * time.Millisecond

// watched is a running call as the watchdog sees it.
type watched struct {
	ns     string // the PID namespace, as /proc/PID/ns/pid reads
	init   int    // the host pid of the namespace's init
	max    int    // processes at once
	maxMem int64  // bytes of memory of their own, together
	killed string // why the watchdog ended it; "" while within the limits
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

// remove stops watching w and says why the watchdog ended it ("": it
// did not).
func (wt *watcher) remove(w *watched) string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	delete(wt.calls, w)
	return w.killed
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
			if w.killed == "" {
				byNS[w.ns] = w
			}
		}
		wt.mu.Unlock()
		if len(byNS) == 0 {
			continue
		}
		for ns, u := range usageByNS(byNS) {
			w := byNS[ns]
			var why string
			switch {
			case u.procs > w.max:
				why = fmt.Sprintf("sandbox: the command started more than %d processes at once (%d); all of them were killed", w.max, u.procs)
			case u.mem > w.maxMem:
				why = fmt.Sprintf("sandbox: the command used more than %s of memory (%s); all of its processes were killed", Size(w.maxMem), Size(u.mem))
			default:
				continue
			}
			_ = syscall.Kill(w.init, syscall.SIGKILL) // the namespace dies with its init
			wt.mu.Lock()
			w.killed = why
			wt.mu.Unlock()
		}
	}
}

// usage is what the processes of one namespace hold.
type usage struct {
	procs int
	mem   int64 // bytes resident and not shared with a file
}

// usageByNS counts the processes of /proc, and sums their memory, in
// each namespace of interest.
func usageByNS(interest map[string]*watched) map[string]usage {
	out := map[string]usage{}
	page := int64(os.Getpagesize())
	ps, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range ps {
		ns, err := os.Readlink(p + "/ns/pid")
		if err != nil {
			continue // exited meanwhile
		}
		if _, ok := interest[ns]; !ok {
			continue
		}
		u := out[ns]
		u.procs++
		// statm: size resident shared … in pages; resident minus shared
		// is the process's anonymous memory (RssAnon).
		if b, err := os.ReadFile(p + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 3 {
				res, _ := strconv.ParseInt(f[1], 10, 64)
				shared, _ := strconv.ParseInt(f[2], 10, 64)
				u.mem += (res - shared) * page
			}
		}
		out[ns] = u
	}
	return out
}

// ParseSize reads a size such as "512MiB", "2GiB", "1.5G", "800M" or a
// number of bytes (K, M, G and T are powers of 1024, as in ulimit).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRight(t, "KMGTiBkmgtb ")
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I")
	shift, ok := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 || v*float64(int64(1)<<shift) > 1<<62 {
		return 0, fmt.Errorf("%q is not a size such as 512MiB or 2GiB", s)
	}
	return int64(v * float64(int64(1)<<shift)), nil
}

// Size writes n bytes for people: "512 MiB", "2.5 GiB".
func Size(n int64) string {
	const k = 1024
	switch {
	case n >= k*k*k:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/(k*k*k), 'f', 1, 64), ".0") + " GiB"
	case n >= k*k:
		return strconv.FormatInt(n/(k*k), 10) + " MiB"
	case n >= k:
		return strconv.FormatInt(n/k, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
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
