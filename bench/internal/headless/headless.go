// Package headless runs `arbor headless` processes for the bench drivers
// (bench/envelope, bench/sessions): each in fresh state directories, with
// its pipes, its ready time and the envelopes it writes.
package headless

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proc is one running `arbor headless` (or a command speaking its
// protocol) with its pipes.
type Proc struct {
	Cmd *exec.Cmd
	In  io.WriteCloser
	// Out reads its stdout, one envelope per line.
	Out    *bufio.Scanner
	Stderr *Tail
	// Ready is the time from the start to the ready line.
	Ready time.Duration
}

// Start runs argv in dir with HOME, XDG_CONFIG_HOME and XDG_STATE_HOME
// under root, env added to the environment, and waits for its ready line.
// On an error the process is killed and the error names its stderr.
func Start(argv []string, dir, root string, env []string) (*Proc, error) {
	p := &Proc{Cmd: exec.Command(argv[0], argv[1:]...), Stderr: &Tail{}}
	p.Cmd.Dir = dir
	p.Cmd.Env = append(slices.Clip(env), "HOME="+filepath.Join(root, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_STATE_HOME="+filepath.Join(root, "state"))
	p.Cmd.Stderr = p.Stderr
	var err error
	if p.In, err = p.Cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.Out = bufio.NewScanner(out)
	p.Out.Buffer(make([]byte, 0, 64<<10), 16<<20)
	t0 := time.Now()
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	typ, _, err := p.Next()
	p.Ready = time.Since(t0)
	if err == nil && typ != "ready" {
		err = fmt.Errorf("first line is %q, not ready", typ)
	}
	if err != nil {
		return nil, p.Fail(err)
	}
	return p, nil
}

// Next reads one envelope and returns its type and payload.
func (p *Proc) Next() (string, json.RawMessage, error) {
	if !p.Out.Scan() {
		return "", nil, cmp.Or(p.Out.Err(), io.ErrUnexpectedEOF)
	}
	var env struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(p.Out.Bytes(), &env); err != nil {
		return "", nil, fmt.Errorf("stdout line %q: %w", p.Out.Text(), err)
	}
	return env.Type, env.Payload, nil
}

// Stop closes stdin, which ends arbor with exit 0, and waits for it.
func (p *Proc) Stop() error {
	p.In.Close()
	for p.Out.Scan() {
	}
	if err := p.Cmd.Wait(); err != nil {
		return fmt.Errorf("arbor exited: %w; stderr: %s", err, p.Stderr)
	}
	return nil
}

// CPU is the CPU time the process's threads have used so far: the sum of
// the first field of /proc/PID/task/*/schedstat, in nanoseconds (the
// clock ticks of /proc/PID/stat are 10 ms, longer than a turn's CPU).
func (p *Proc) CPU() (time.Duration, error) {
	dir := fmt.Sprintf("/proc/%d/task", p.Cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0, fmt.Errorf("empty %s/%s/schedstat", dir, t.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		total += time.Duration(ns)
	}
	return total, nil
}

// Kill kills the process if it still runs and waits for it.
func (p *Proc) Kill() {
	if p.Cmd.Process != nil && p.Cmd.ProcessState == nil {
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
	}
}

// Fail kills the process and adds its stderr to err.
func (p *Proc) Fail(err error) error {
	p.Kill()
	return fmt.Errorf("%w; arbor stderr: %s", err, p.Stderr)
}

// Tail keeps the last 4 KiB written to it (a process's stderr).
type Tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// Quantile is the q-quantile of v, the nearest rank on the sorted values.
func Quantile[T cmp.Ordered](v []T, q float64) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}
