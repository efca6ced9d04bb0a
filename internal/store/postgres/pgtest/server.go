package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Server is a throwaway PostgreSQL cluster in a temporary directory.
type Server struct {
	// DSN connects to the server's postgres database as its superuser.
	DSN string

	dir  string
	proc *os.Process
	done chan struct{} // closed when the server process has exited
	// log holds the server's output: its last lines explain a failure.
	logMu sync.Mutex // guards log
	log   []string

	stopOnce sync.Once
	stopErr  error
}

// Start initialises a cluster in a new temporary directory and starts it
// on a free loopback port, with its unix socket in that directory. As
// root, both run as the "postgres" user (or "nobody"), since PostgreSQL
// refuses to run as root. The server gets SIGQUIT (immediate shutdown)
// if this process dies, so a killed test run leaves no server behind.
func Start(ctx context.Context) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "arbor-pg-")
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("give %s to the server's user: %w", dir, err)
		}
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	if err := s.start(ctx, bin, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, bin string, cred *syscall.Credential) error {
	data := filepath.Join(s.dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "arbor",
		"--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB", "-c", "logging_collector=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that forked the server exits, so
		// this goroutine keeps its thread for the server's whole life.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("start postgres: %w", err)
			close(s.done)
			return
		}
		s.proc = cmd.Process
		started <- nil
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return err
	}
	ready := make(chan struct{})
	go s.readLog(stderr, ready)
	select {
	case <-ready:
	case <-s.done:
		return fmt.Errorf("postgres exited before accepting connections:\n%s", s.lastLog())
	}
	s.DSN = fmt.Sprintf("postgres://arbor@127.0.0.1:%d/postgres?sslmode=disable", port)
	return nil
}

// readLog keeps the server's output and closes ready once it accepts
// connections. It returns when the server closes its stderr (exits).
func (s *Server) readLog(r io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		s.logMu.Lock()
		s.log = append(s.log, line)
		if len(s.log) > 200 {
			s.log = slices.Delete(s.log, 0, 100)
		}
		s.logMu.Unlock()
		if ready != nil && strings.Contains(line, "database system is ready to accept connections") {
			close(ready)
			ready = nil
		}
	}
}

func (s *Server) lastLog() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return strings.Join(s.log, "\n")
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// removes its directory. It is safe to call twice.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.proc != nil {
			if err := s.proc.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
				s.stopErr = err
			}
		}
		<-s.done
		s.stopErr = errors.Join(s.stopErr, os.RemoveAll(s.dir))
	})
	return s.stopErr
}

// errNotInstalled is findBin's error: the server binaries are missing.
var errNotInstalled = errors.New("initdb and postgres are not installed")

// findBin returns the directory of initdb and postgres: the one on PATH,
// else the newest Debian install under /usr/lib/postgresql.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w (not on PATH, not under /usr/lib/postgresql)", errNotInstalled)
}

// version is the major version in /usr/lib/postgresql/<version>/bin.
func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// credential returns the user the server runs as: nil (this process's)
// unless this process is root, which PostgreSQL refuses to run as.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and there is neither a postgres nor a nobody user to run the server as")
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
