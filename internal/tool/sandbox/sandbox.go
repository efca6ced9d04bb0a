package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Mode says whether commands are confined.
type Mode string

const (
	// Off runs commands with all of the user's rights.
	Off Mode = "off"
	// Auto confines commands where a mechanism works and says once, at
	// start, when none does (commands then ask for approval as before).
	Auto Mode = "auto"
	// Required refuses to start where no mechanism works.
	Required Mode = "required"
)

// ParseMode reads a mode; "" is Auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return Auto, nil
	case Off, Auto, Required:
		return m, nil
	}
	return "", fmt.Errorf("sandbox mode %q: off, auto or required", s)
}

// ErrUnavailable is New's error where no mechanism works; it says what
// is missing.
var ErrUnavailable = errors.New("the sandbox is unavailable")

// Policy is what a confined command may do.
type Policy struct {
	// Workspace is where the command runs and may write.
	Workspace string
	// Writable are further directories it may write (a node's worktree,
	// paths the config adds).
	Writable []string
	// DenyRead are paths it may not read (nor write): directories look
	// empty, files empty (config.SandboxDenyRead gives the usual secrets).
	DenyRead []string
	// Allow is the network allow-list (see ProxyOptions.Allow); empty: no
	// network at all.
	Allow []string
	// MaxProcesses ends every process of a call once it has more than this
	// many at once (a fork bomb ends, the tree goes on); 0 is
	// DefaultMaxProcesses.
	MaxProcesses int
	// MaxMemory ends every process of a call once they hold more than this
	// many bytes of memory of their own together; 0 is DefaultMaxMemory.
	MaxMemory int64
	// Blocked is told of every destination the proxy refused; may be nil.
	Blocked func(host string, port int)
}

// DefaultMaxProcesses bounds the processes of one call.
const DefaultMaxProcesses = 512

// DefaultMaxMemory bounds the memory of one call: half of this machine's
// (4 GiB where /proc/meminfo does not say).
func DefaultMaxMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 {
					return kb * 1024 / 2
				}
			}
		}
	}
	return 4 << 30
}

// Sandbox confines the commands of one App (every session and node of
// it): Wrap turns a command into one that bubblewrap runs in namespaces
// of its own. Its private temp directory is the commands' /tmp.
type Sandbox struct {
	policy Policy
	bwrap  string // the bubblewrap binary
	socat  string // the relay of a call with an allow-list; "": arbor's helper
	allow  *Proxy // answers Reaches; nil: no network
	tmp    string // private temp dir, /tmp inside
	calls  atomic.Int64
	watch  watcher

	mu      sync.Mutex // guards the fields below
	closed  bool
	active  int               // calls wrapped and not yet done
	made    []string          // protected directories made as mount points (protect.go)
	base    map[string]link   // while calls run: each watched path as before the first of them (protect.go)
	gitBase map[string]fileID // while calls run: the git dirs before the first of them (gitrepos.go)
	mounts  string            // the mount points' lock and record file (mounts.go)
	lock    *os.File          // it, open
	locked  bool              // the lock is held shared
}

// New makes the sandbox of p, or fails with ErrUnavailable saying why no
// mechanism works here.
func New(p Policy) (*Sandbox, error) {
	bw, err := Detect()
	if err != nil {
		return nil, err
	}
	if p.Workspace == "" {
		return nil, errors.New("sandbox: no workspace")
	}
	abs := func(ps []string) []string {
		var out []string
		for _, x := range ps {
			if a, err := filepath.Abs(x); err == nil {
				out = append(out, filepath.Clean(a))
			}
		}
		return out
	}
	p.Workspace = abs([]string{p.Workspace})[0]
	p.Writable, p.DenyRead = abs(p.Writable), abs(p.DenyRead)
	if p.MaxProcesses <= 0 {
		p.MaxProcesses = DefaultMaxProcesses
	}
	if p.MaxMemory <= 0 {
		p.MaxMemory = DefaultMaxMemory()
	}
	s := &Sandbox{policy: p, bwrap: bw, socat: findSocat(), mounts: mountsFile()}
	if len(p.Allow) > 0 {
		if s.socat == "" && !helperRegistered {
			return nil, fmt.Errorf("%w: a network allow-list needs socat or arbor's sandbox helper, which this program does not include (it calls sandbox.Main at start)", ErrUnavailable)
		}
		if s.allow, err = NewProxy(ProxyOptions{Allow: p.Allow}); err != nil {
			return nil, fmt.Errorf("sandbox.network.allow: %w", err)
		}
	}
	if s.tmp, err = os.MkdirTemp("", "arbor-sandbox-"); err != nil {
		return nil, fmt.Errorf("sandbox: private temp dir: %w", err)
	}
	if s.socat != "" && len(p.Allow) > 0 {
		if err := syscall.Mkfifo(filepath.Join(s.tmp, relayWait), 0o600); err != nil {
			s.socat = "" // arbor's helper relays instead
		}
	}
	return s, nil
}

// Reaches reports whether the network allow-list lets confined calls
// (and arbor's own network tools under the sandbox) reach host:port.
func (s *Sandbox) Reaches(host string, port int) bool {
	return s.allow != nil && s.allow.Allowed(host, port)
}

// Close removes the private temp dir. Safe to call twice; the calls
// must be done.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.watch.wg.Wait()
	s.closeLock()
	return os.RemoveAll(s.tmp)
}

// Call is one confined command: run Argv with Env added to the
// environment and ExtraFiles as the command's (fd 3 on), call Started
// once it started and Done once it ended.
type Call struct {
	Argv       []string
	Env        []string
	ExtraFiles []*os.File
	done       func()
	guard      *guard // the protected paths (protect.go)

	sb      *Sandbox
	info    *os.File // read end of bubblewrap's --info-fd
	watched chan *watched

	mu      sync.Mutex // guards blocked
	blocked []string   // what the sandbox refused the call, a line each
}

// Started hands the call to the watchdog: call it once the command
// started (or failed to), after which ExtraFiles may be closed.
func (c *Call) Started() {
	for _, f := range c.ExtraFiles {
		_ = f.Close() // the command has its copy
	}
	c.ExtraFiles = nil
	info := c.info
	c.info = nil
	if info == nil {
		return
	}
	go func() { // ends when bubblewrap wrote its info or exited
		pid, ns, ok := readInit(info)
		if !ok {
			c.watched <- nil
			return
		}
		w := &watched{ns: ns, init: pid, max: c.sb.policy.MaxProcesses, maxMem: c.sb.policy.MaxMemory}
		c.sb.watch.add(w)
		c.watched <- w
	}()
}

// Done releases what the call held (its proxy and socket, its watch) and
// returns what the sandbox refused it, a line each: the destinations its
// proxy refused, a process limit it passed. Call it once the command
// ended; a second call returns the same.
func (c *Call) Done() []string {
	if c.info != nil { // never started
		c.Started()
	}
	if c.done != nil {
		c.done()
		c.done = nil
	}
	if c.guard != nil {
		for _, line := range c.guard.check() {
			c.blockedLine(line)
		}
		c.sb.release()
		c.guard = nil
	}
	if c.watched != nil {
		if w := <-c.watched; w != nil {
			if why := c.sb.watch.remove(w); why != "" {
				c.mu.Lock()
				c.blocked = append(c.blocked, why)
				c.mu.Unlock()
			}
		}
		c.watched = nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.blocked)
}

// proxyPort is the port the helper listens on inside the sandbox: the
// network namespace is the call's own, so any port is free.
const proxyPort = 3128

// Wrap returns argv confined, to run in dir (the workspace or below it;
// dir outside every writable path still runs, read-only).
func (s *Sandbox) Wrap(dir string, argv []string) (*Call, error) {
	n := s.calls.Add(1)
	c := &Call{sb: s, watched: make(chan *watched, 1)}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: info pipe: %w", err)
	}
	c.info, c.ExtraFiles = r, []*os.File{w}
	seccompFD := -1
	if len(s.policy.Allow) == 0 { // with an allow-list the command installs it (seccomp.go)
		f, err := filterFile()
		if err != nil {
			_, _ = r.Close(), w.Close()
			return nil, err
		}
		if f != nil {
			c.ExtraFiles = append(c.ExtraFiles, f)
			seccompFD = 4
		}
	}
	var socket string
	if len(s.policy.Allow) > 0 {
		// A proxy of the call's own, so that what it refused is the call's.
		px, err := NewProxy(ProxyOptions{Allow: s.policy.Allow, Blocked: func(host string, port int) {
			c.blockedLine("sandbox: the network access to " + net.JoinHostPort(host, strconv.Itoa(port)) +
				" was blocked (sandbox.network.allow lists the hosts commands may reach)")
			if s.policy.Blocked != nil {
				s.policy.Blocked(host, port)
			}
		}})
		if err != nil {
			c.closeFiles()
			return nil, err
		}
		socket = filepath.Join(s.tmp, "proxy-"+strconv.FormatInt(n, 10)+".sock")
		l, err := px.ListenUnix(socket)
		if err != nil {
			c.closeFiles()
			return nil, fmt.Errorf("sandbox: proxy socket: %w", err)
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = px.Serve(l)
		}()
		c.done = func() {
			_ = px.Close()
			<-served
			_ = os.Remove(socket)
		}
		url := "http://127.0.0.1:" + strconv.Itoa(proxyPort)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
			c.Env = append(c.Env, k+"="+url)
		}
		c.Env = append(c.Env, "NO_PROXY=", "no_proxy=")
	}
	c.guard = s.hold()
	c.Argv = s.bwrapArgs(dir, argv, socket, 3, seccompFD, c.guard.args)
	return c, nil
}

// closeFiles closes the files of a call that will not start.
func (c *Call) closeFiles() {
	_ = c.info.Close()
	for _, f := range c.ExtraFiles {
		_ = f.Close()
	}
}

// blockedLine adds note to what the sandbox refused the call, once.
func (c *Call) blockedLine(note string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.blocked, note) {
		c.blocked = append(c.blocked, note)
	}
}

// bwrapArgs is the bubblewrap command line that runs argv in dir: the
// whole file system read-only, the writable paths bound read-write, the
// denied ones hidden, a private /tmp, new user, PID, network, IPC and UTS
// namespaces, and everything killed when arbor dies. protected are the
// arguments that keep the protected paths read-only (protect.go). With a proxy socket
// the helper runs first (see Main).
func (s *Sandbox) bwrapArgs(dir string, argv []string, socket string, infoFD, seccompFD int, protected []string) []string {
	p := s.policy
	a := []string{s.bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--info-fd", strconv.Itoa(infoFD),
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--bind", s.tmp, "/tmp", "--setenv", "TMPDIR", "/tmp"}
	for _, w := range append([]string{p.Workspace}, p.Writable...) {
		if _, err := os.Stat(w); err == nil {
			a = append(a, "--bind", w, w)
		}
	}
	a = append(a, protected...)
	if len(argv) > 0 && filepath.IsAbs(argv[0]) && within(argv[0], "/tmp") && !within(argv[0], append([]string{p.Workspace}, p.Writable...)...) {
		// A program under the host's /tmp (a test binary, go run's) runs
		// from there: the private /tmp would hide it.
		a = append(a, "--ro-bind", argv[0], argv[0])
	}
	for _, d := range p.DenyRead {
		fi, err := os.Stat(d)
		switch {
		case err != nil:
			continue // nothing there to hide
		case fi.IsDir():
			a = append(a, "--tmpfs", d, "--remount-ro", d)
		default:
			a = append(a, "--ro-bind", "/dev/null", d)
		}
	}
	if seccompFD >= 0 {
		a = append(a, "--seccomp", strconv.Itoa(seccompFD))
	}
	if socket == "" { // only a call that may reach the network needs a relay
		return append(append(a, "--chdir", dir, "--"), argv...)
	}
	inside := "/tmp/" + filepath.Base(socket)
	// Bound at a path of its own: the binary may be anywhere, even in the
	// /tmp the sandbox replaces (go run builds it there).
	exe, _ := os.Executable()
	if s.socat != "" {
		if helperRegistered { // the command runs under the seccomp filter
			a = append(a, "--ro-bind", exe, helperPath)
			argv = append([]string{helperPath, seccompArg, "--"}, argv...)
		}
		a = append(a, "--chdir", dir, "--", "bash", "-c", socatScript(s.socat, inside, proxyPort), "arbor-sandbox")
		return append(a, argv...)
	}
	a = append(a, "--ro-bind", exe, helperPath, "--chdir", dir, "--",
		helperPath, helperArg, inside, strconv.Itoa(proxyPort), "--")
	return append(a, argv...)
}

// within reports whether path is one of dirs or below one.
func within(path string, dirs ...string) bool {
	for _, d := range dirs {
		if rel, err := filepath.Rel(d, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// helperPath is where arbor's binary is inside the sandbox.
const helperPath = "/tmp/.arbor-sandbox-helper"

// Explain names what the sandbox blocked that shows in a command's
// output: a denied path it mentions, a write refused as read-only. Each
// note is a line for the model, so that it can adapt.
func (s *Sandbox) Explain(output string) []string {
	var notes []string
	for _, d := range s.policy.DenyRead {
		if strings.Contains(output, d) {
			notes = append(notes, fmt.Sprintf("sandbox: %s is hidden from commands (it holds secrets); it reads as empty or missing", d))
		}
	}
	// A path under /tmp outside the workspace does not exist inside: the
	// call's /tmp is its own.
	if strings.Contains(output, "Read-only file system") || strings.Contains(output, "/tmp/") && strings.Contains(output, "No such file or directory") {
		roots := append([]string{s.policy.Workspace, "/tmp"}, s.policy.Writable...)
		notes = append(notes, "sandbox: commands may write only in "+strings.Join(roots, ", ")+" (/tmp is the call's own); everything else is read-only")
		if mentionsProtected(output) {
			notes = append(notes, protectedNote)
		}
	}
	if len(s.policy.Allow) == 0 && networkFailed(output) {
		notes = append(notes, "sandbox: commands have no network access (sandbox.network.allow lists the hosts they may reach)")
	}
	return notes
}

// networkFailed reports whether output shows a failed name lookup or
// connection, as common tools word it.
func networkFailed(output string) bool {
	for _, s := range []string{"Could not resolve host", "Temporary failure in name resolution", "Network is unreachable",
		"Name or service not known", "getaddrinfo", "Connection refused"} {
		if strings.Contains(output, s) {
			return true
		}
	}
	return false
}

var (
	detectOnce sync.Once
	detected   string
	detectErr  error
)

// Detect finds a mechanism that works here, once per process: bubblewrap
// on PATH that can create the namespaces the sandbox uses. Its error wraps
// ErrUnavailable and says what is missing. A probe that succeeded on this
// boot under the same conditions is not run again (probe.go).
func Detect() (string, error) {
	detectOnce.Do(func() { detected, detectErr = detect(probeCache(), probe) })
	return detected, detectErr
}

// detect is Detect with the probe cache file and the probe.
func detect(cache string, probe func(bwrap string) error) (string, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)", ErrUnavailable)
	}
	key := probeKey(bw)
	if probed(cache, key) {
		return bw, nil
	}
	if err := probe(bw); err != nil {
		return "", err
	}
	rememberProbe(cache, key)
	return bw, nil
}

// probe runs bubblewrap with every namespace the sandbox uses.
func probe(bw string) error {
	out, err := exec.Command(bw, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
		"--proc", "/proc", "--", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: bubblewrap cannot create its namespaces here (%s): user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)",
			ErrUnavailable, strings.TrimSpace(string(out)+" "+err.Error()))
	}
	return nil
}
