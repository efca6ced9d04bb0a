package mcpclient

import (
	"fmt"
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
// stdout as pipes, its stderr copied to a log file (serverLog).
type process struct {
	pgid     int
	stdin    *stdinQueue // to our end
	stdout   *os.File    // our end
	stderr   *os.File    // our end
	done     chan struct{}
	stopOnce sync.Once
	log      *serverLog
	// logged is closed when its stderr has been copied to the log.
	logged chan struct{}
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// startProcess starts spec's command; scrub takes the secrets out of what
// goes to its log.
func startProcess(name string, spec config.MCPServer, o Options, scrub func(string) string) (*process, error) {
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
	log, err := openServerLog(o.LogDir, name, scrub)
	if err != nil {
		return nil, err
	}
	var pipes [6]*os.File // in, out and err: the child's end, then ours
	for i := 0; i < 6; i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			closeAll(pipes[:i]...)
			log.close()
			return nil, err
		}
	}
	inR, inW, outR, outW, errR, errW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	fail := func(err error) (*process, error) {
		closeAll(pipes[:]...)
		log.close()
		return nil, fmt.Errorf("starting %s: %w", spec.Command, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	how := ""
	var call *sandbox.Call
	var sb *sandbox.Sandbox
	if o.Sandbox != nil && o.Confined != nil && o.Confined(spec) && cmd.Err == nil {
		sb = o.Sandbox()
	}
	if sb != nil {
		if call, err = sb.Wrap(cmd.Dir, cmd.Args); err != nil {
			return fail(err)
		}
		cmd.Path, cmd.Args, cmd.Err = call.Argv[0], call.Argv, nil
		cmd.Env = append(cmd.Env, call.Env...)
		cmd.ExtraFiles = call.ExtraFiles
		how = " (confined by the sandbox)"
	}
	log.note(fmt.Sprintf("starting %s%s", spec.Command, how))

	p := &process{stdout: outR, stderr: errR, done: make(chan struct{}), logged: make(chan struct{}), log: log}
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
			for _, n := range call.Done() {
				log.note(n)
			}
		}
		errc <- err
	}()
	select {
	case p.pgid = <-started:
	case err := <-errc:
		return fail(err)
	}
	// The child holds these ends now; closing ours lets EOF through when
	// it exits.
	closeAll(inR, outW, errW)
	p.stdin = newStdinQueue(inW)
	go func() {
		defer close(p.logged)
		log.copy(errR)
	}()
	return p, nil
}

func (p *process) transport(tooLarge func()) mcp.Transport {
	return &mcp.IOTransport{Reader: newLineFilter(p.stdout, p.log.note, tooLarge), Writer: p.stdin, MaxLineLength: -1}
}

// stop closes the server's stdin, gives it stopGrace to exit, and kills
// its process group (what it started too). It returns once the process
// has been waited for; it is safe to call twice.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.stop()
		select {
		case <-p.done:
		case <-time.After(stopGrace):
		}
		_ = tool.KillGroup(p.pgid)
		<-p.done
		p.stdout.Close()
		// Its stderr ends when every process of its group is gone; one
		// that left the group (setsid) and kept it open is not waited
		// for long.
		select {
		case <-p.logged:
		case <-time.After(stopGrace):
		}
		p.stderr.Close()
		<-p.logged
		p.log.close()
	})
}
