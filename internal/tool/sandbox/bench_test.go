package sandbox

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// BenchmarkTrue is the overhead of the sandbox on one command: `true` run
// plain, confined (bubblewrap and the helper), and confined with a
// network allow-list (the call's proxy on its socket too). The issue's
// target is a median extra time per call of at most 15 ms; bench/sandbox.sh
// prints the ratio and the extra time.
func BenchmarkTrue(b *testing.B) {
	ws := b.TempDir()
	run := func(b *testing.B, argv, env []string, c *Call) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if c != nil {
			cmd.ExtraFiles = c.ExtraFiles
		}
		err := cmd.Start()
		if c != nil {
			c.Started()
		}
		if err == nil {
			err = cmd.Wait()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			run(b, []string{"bash", "-c", "true"}, nil, nil)
		}
	})
	for _, c := range []struct {
		name  string
		allow []string
	}{{"confined", nil}, {"confined-proxy", []string{"example.com"}}} {
		b.Run(c.name, func(b *testing.B) {
			sb, err := New(Policy{Workspace: ws, Allow: c.allow})
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			for b.Loop() {
				call, err := sb.Wrap(ws, []string{"bash", "-c", "true"})
				if err != nil {
					b.Fatal(err)
				}
				run(b, call.Argv, call.Env, call)
				call.Done()
			}
		})
	}
}
