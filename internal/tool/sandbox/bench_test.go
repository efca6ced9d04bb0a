package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTrue is the overhead of the sandbox on one command: `true` run
// plain, confined (bubblewrap), and confined with a network allow-list
// (the relay into the call's network namespace and the call's proxy too),
// the relay being socat or, where socat is missing, arbor's own binary. Besides the mean (ns/op) it reports the median call (ms/median),
// which the target is about: at most 15 ms more than plain.
// bench/sandbox.sh prints the extra time.
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
	median := func(b *testing.B, call func()) {
		var took []time.Duration
		for b.Loop() {
			t := time.Now()
			call()
			took = append(took, time.Since(t))
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms/median")
	}
	b.Run("plain", func(b *testing.B) {
		median(b, func() { run(b, []string{"bash", "-c", "true"}, nil, nil) })
	})
	for _, c := range []struct {
		name   string
		allow  []string
		helper bool
	}{{"confined", nil, false}, {"confined-proxy", []string{"example.com"}, false}, {"confined-proxy-helper", []string{"example.com"}, true}} {
		b.Run(c.name, func(b *testing.B) {
			sb, err := New(Policy{Workspace: ws, Allow: c.allow})
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			if c.helper {
				sb.socat = "" // arbor's binary relays, as where socat is missing
			} else if c.allow != nil && sb.socat == "" {
				b.Fatal("socat is not installed")
			}
			median(b, func() {
				call, err := sb.Wrap(ws, []string{"bash", "-c", "true"})
				if err != nil {
					b.Fatal(err)
				}
				run(b, call.Argv, call.Env, call)
				call.Done()
			})
		})
	}
}
