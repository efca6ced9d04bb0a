package sandbox

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnixSocketsOutsideUnreachable: a Unix socket listening outside the
// workspace (as Docker's, the user's D-Bus bus or an ssh-agent do) cannot
// be reached by a confined command, with no network or with an
// allow-list under either relay, while a socketpair still works and the
// allow-list's proxy is still reached.
func TestUnixSocketsOutsideUnreachable(t *testing.T) {
	t.Parallel()
	socat, err := exec.LookPath("socat")
	if err != nil {
		t.Fatal("socat is not installed (bash scripts/test.sh installs it)")
	}
	for _, c := range []struct{ name, relay string }{{"no-network", ""}, {"allow-list/socat", "socat"}, {"allow-list/helper", "helper"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var allow []string
			if c.relay != "" {
				allow = []string{"127.0.0.1:9"}
			}
			b := setup(t, allow...)
			if c.relay == "helper" {
				b.sb.socat = ""
			}
			// Not under /tmp, which is the call's own: where daemons put
			// theirs (/run, /var/run) is seen as it is.
			dir, err := os.MkdirTemp("/var/tmp", "arbor-sock-")
			must(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			sock := filepath.Join(dir, "daemon.sock")
			l, err := net.Listen("unix", sock)
			must(t, err)
			t.Cleanup(func() { _ = l.Close() })
			reached := make(chan string, 1)
			accepted := make(chan struct{})
			go func() {
				defer close(accepted)
				conn, err := l.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				buf := make([]byte, 64)
				n, _ := conn.Read(buf)
				reached <- string(buf[:n])
			}()
			// socat's SYSTEM talks to its child over a socketpair.
			r := b.run(t, "echo ESCAPED | "+socat+" - UNIX-CONNECT:"+sock+" && echo CONNECTED; "+
				"echo SOCKETPAIR-OK | "+socat+" - SYSTEM:cat")
			must(t, l.Close())
			<-accepted // what was sent before the close is in reached
			select {
			case got := <-reached:
				t.Fatalf("a confined command reached a Unix socket outside (%q):\n%s", got, r.out)
			default:
			}
			if strings.Contains(r.out, "CONNECTED") {
				t.Fatalf("the connection to a Unix socket outside succeeded:\n%s", r.out)
			}
			if !strings.Contains(r.out, "SOCKETPAIR-OK") {
				t.Fatalf("a socketpair, which reaches nothing, failed:\n%s", r.out)
			}
		})
	}
}
