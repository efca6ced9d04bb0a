package mcpclient

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// stopGrace is how long a stdio server gets to exit after its stdin
// closed before its process group is killed.
const stopGrace = 2 * time.Second

// process is a running stdio server: its own process group, its stdin and
// stdout as pipes, its stderr appended to a log file.
type process struct {
	pgid     int
	stdin    *os.File // our end
	stdout   *os.File // our end
	done     chan struct{}
	stopOnce sync.Once
	// note appends a line to the server's log.
	note func(string)
}

// startProcess starts spec's command.
func startProcess(name string, spec config.MCPServer, o Options) (*process, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Dir = o.Workspace
	if spec.Cwd != "" {
		cmd.Dir = spec.Cwd
		if !filepath.IsAbs(spec.Cwd) && o.Workspace != "" {
			cmd.Dir = filepath.Join(o.Workspace, spec.Cwd)
		}
	}
	cmd.Env = append([]string(nil), o.Environ...)
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+spec.Env[k])
	}
	logf, err := openLog(o.LogDir, name)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logf
	how := ""
	var call *sandbox.Call
	var sb *sandbox.Sandbox
	if o.Sandbox != nil && o.Confined != nil && o.Confined(spec) && cmd.Err == nil {
		sb = o.Sandbox()
	}
	if sb != nil {
		if call, err = sb.Wrap(cmd.Dir, cmd.Args); err != nil {
			for _, f := range []*os.File{inR, inW, outR, outW} {
				f.Close()
			}
			return nil, fmt.Errorf("starting %s: %w", spec.Command, err)
		}
		cmd.Path, cmd.Args, cmd.Err = call.Argv[0], call.Argv, nil
		cmd.Env = append(cmd.Env, call.Env...)
		cmd.ExtraFiles = call.ExtraFiles
		how = " (confined by the sandbox)"
	}
	fmt.Fprintf(logf, "--- %s: starting %s%s\n", time.Now().UTC().Format(time.RFC3339), spec.Command, how)

	p := &process{stdin: inW, stdout: outR, done: make(chan struct{}), note: logNote(o.LogDir, name)}
	started := make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		defer close(p.done)
		err := tool.RunInGroup(cmd, func(pgid int) {
			if call != nil {
				call.Started()
			}
			started <- pgid
		})
		if call != nil {
			logNotes(o.LogDir, name, call.Done())
		}
		errc <- err
	}()
	select {
	case p.pgid = <-started:
	case err := <-errc:
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", spec.Command, err)
	}
	// The child holds these ends now; closing ours lets EOF through when
	// it exits.
	inR.Close()
	outW.Close()
	return p, nil
}

// logNotes appends what the sandbox refused a confined server to its log.
func logNotes(dir, name string, notes []string) {
	if len(notes) == 0 {
		return
	}
	f, err := openLog(dir, name)
	if err != nil {
		return
	}
	defer f.Close()
	for _, n := range notes {
		fmt.Fprintf(f, "--- %s\n", n)
	}
}

// openLog opens the server's log for appending; without a directory, the
// null device.
func openLog(dir, name string) (*os.File, error) {
	if dir == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("MCP log directory: %w", err)
	}
	f, err := os.OpenFile(LogFile(dir, name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MCP log: %w", err)
	}
	return f, nil
}

// LogFile is where a stdio server's stderr goes.
func LogFile(dir, name string) string { return filepath.Join(dir, "mcp-"+name+".log") }

func (p *process) transport() mcp.Transport {
	return &mcp.IOTransport{Reader: newLineFilter(p.stdout, p.note), Writer: nopCloseWriter{p.stdin}, MaxLineLength: -1}
}

// logNote returns a function that appends a note to the server's log
// (opening it for each note: they are few).
func logNote(dir, name string) func(string) {
	return func(msg string) {
		f, err := openLog(dir, name)
		if err != nil {
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "--- %s: %s\n", time.Now().UTC().Format(time.RFC3339), msg)
	}
}

// nopCloseWriter leaves closing stdin to stop, which then waits for the
// process.
type nopCloseWriter struct{ io.Writer }

func (nopCloseWriter) Close() error { return nil }

// stop closes the server's stdin, gives it stopGrace to exit, and kills
// its process group (what it started too). It returns once the process
// has been waited for; it is safe to call twice.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(stopGrace):
		}
		_ = tool.KillGroup(p.pgid)
		<-p.done
		p.stdout.Close()
	})
}
