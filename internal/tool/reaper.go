package tool

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The reaper makes tool processes die with arbor even when arbor is
// SIGKILLed: Pdeathsig reaches only the direct child of arbor, not what it
// started. It is one bash process per arbor process, started with the
// first tool process, in its own process group (a Ctrl-C at the terminal
// does not reach it) and ignoring the usual termination signals. arbor
// writes "+ PGID" to its stdin when a group starts and "- PGID" when the
// group is gone; when the pipe closes — arbor exited, however — it kills
// every group still listed and exits.
//
// The write end of the pipe is close-on-exec, so no tool process holds it
// open, and it is kept referenced for the life of the process: closing it
// (even by the garbage collector) would kill every running tool.
//
// Groups are kept in a sparse indexed array (the index is the pgid), which
// bash 3 (macOS) has too.
const reaperScript = `# arbor tool reaper
trap '' INT TERM HUP QUIT
groups=()
while read -r op pgid; do
	case $op in
	+) groups[$pgid]=1 ;;
	-) unset "groups[$pgid]" ;;
	esac
done
for pgid in "${!groups[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null; done
`

// reaperWriteTimeout bounds a write to the reaper: a reaper that stopped
// reading (stopped by a signal) must not stall tool calls. Past it the
// reaper is given up and only Pdeathsig and resume remain.
const reaperWriteTimeout = time.Second

// reaper is the process-wide reaper. It is the one package-level state of
// the tool package, because it stands for the process's own lifetime.
var reap reaper

type reaper struct {
	once sync.Once
	// w is the write end of the reaper's stdin; nil when it could not be
	// started or was given up (its file then stays in dead, open).
	w    atomic.Pointer[os.File]
	dead atomic.Pointer[os.File]
}

// list lists pgid with the reaper and returns the function that unlists it.
func (r *reaper) list(pgid int) (unlist func()) {
	r.once.Do(r.start)
	r.send('+', pgid)
	return func() { r.send('-', pgid) }
}

func (r *reaper) send(op byte, pgid int) {
	w := r.w.Load()
	if w == nil {
		return
	}
	line := append([]byte{op, ' '}, strconv.Itoa(pgid)...)
	line = append(line, '\n')
	// One write of a short line is atomic on a pipe, so concurrent sends
	// need no lock of ours.
	_ = w.SetWriteDeadline(time.Now().Add(reaperWriteTimeout))
	if _, err := w.Write(line); err != nil {
		r.giveUp(w)
	}
}

// giveUp stops using w and keeps it open: closing it would make the
// reaper kill every group it lists.
func (r *reaper) giveUp(w *os.File) {
	if r.w.CompareAndSwap(w, nil) {
		r.dead.Store(w)
	}
}

// start starts the reaper process. Failing to is not fatal: tool
// processes still die by Pdeathsig and by resume.
func (r *reaper) start() {
	pr, pw, err := os.Pipe()
	if err != nil {
		return
	}
	cmd := exec.Command("bash", "-c", reaperScript)
	cmd.Stdin = pr
	// PATH only: BASH_ENV and the like must not run anything in it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Dir = "/" // pin no directory of arbor's
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return
	}
	r.w.Store(pw)
	// The reaper lives as long as this process; this goroutine only reaps
	// it should it die early, and then stops using it.
	go func() {
		_ = cmd.Wait()
		r.giveUp(pw)
	}()
}
