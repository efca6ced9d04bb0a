package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	Main() // this test binary is the helper inside the sandbox, as arbor is
	os.Exit(m.Run())
}

// hangGuard bounds a confined command that a broken sandbox would let run
// on; a working one never reaches it.
const hangGuard = 2 * time.Minute

type bundle struct {
	home, ws, outside string
	sb                *Sandbox
}

// setup makes a home with a planted key and arbor config, a workspace and
// a directory outside it, and the sandbox of that workspace with
// allow as its network allow-list.
func setup(t *testing.T, allow ...string) *bundle {
	t.Helper()
	if _, err := Detect(); err != nil {
		t.Fatalf("%v: the sandbox tests need bubblewrap (bash scripts/test.sh installs it)", err)
	}
	root := t.TempDir()
	b := &bundle{home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{b.ws, b.outside, filepath.Join(b.home, ".ssh"), filepath.Join(b.home, ".config", "arbor")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(b.home, ".ssh", "id_rsa"), []byte("-----BEGIN PRIVATE KEY----- planted"), 0o600))
	must(t, os.WriteFile(filepath.Join(b.home, ".config", "arbor", "config.yaml"), []byte("api_key: sk-planted"), 0o600))
	must(t, os.WriteFile(filepath.Join(b.home, ".netrc"), []byte("machine x password planted"), 0o600))
	sb, err := New(Policy{Workspace: b.ws, Allow: allow,
		DenyRead: []string{filepath.Join(b.home, ".ssh"), filepath.Join(b.home, ".config", "arbor"), filepath.Join(b.home, ".netrc")}})
	must(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	sb.mounts = filepath.Join(root, "mounts") // this test's: another's running call would keep its mount points
	b.sb = sb
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// result is what a confined command did.
type result struct {
	out     string
	code    int
	blocked []string
}

// run runs script with bash -c in the workspace, confined, as the shell
// tool does: its own process group, killed when this process dies.
func (b *bundle) run(t *testing.T, script string) result {
	t.Helper()
	c, err := b.sb.Wrap(b.ws, []string{"bash", "-c", script})
	must(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = b.ws
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.ExtraFiles = c.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Start()
	c.Started()
	if err == nil {
		err = cmd.Wait()
	}
	out := buf.String()
	r := result{out: out, blocked: c.Done()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("the confined command ran past %s:\n%s", hangGuard, out)
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// TestEscapesBlocked: every way out of the workspace that a command might
// try is refused, and what is allowed works.
func TestEscapesBlocked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, os.Symlink(b.outside, filepath.Join(b.ws, "link")))
	for _, c := range []struct {
		name, script string
		// written is a file outside the workspace that must not exist
		// afterwards; "" when the attempt is a read.
		written string
		// leaked is text that must not appear in the output.
		leaked string
	}{
		{name: "absolute", script: "echo x > " + b.outside + "/abs", written: filepath.Join(b.outside, "abs")},
		{name: "dotdot", script: "echo x > ../outside/dotdot", written: filepath.Join(b.outside, "dotdot")},
		{name: "symlink", script: "echo x > link/viasymlink", written: filepath.Join(b.outside, "viasymlink")},
		{name: "proc-root", script: "echo x > /proc/self/root" + b.outside + "/viaproc", written: filepath.Join(b.outside, "viaproc")},
		{name: "home-ssh-key", script: "cat " + b.home + "/.ssh/id_rsa", leaked: "planted"},
		{name: "arbor-config", script: "cat " + b.home + "/.config/arbor/config.yaml; grep -r api_key " + b.home + "/.config", leaked: "sk-planted"},
		{name: "netrc", script: "cat " + b.home + "/.netrc", leaked: "planted"},
		{name: "ssh-via-proc", script: "cat /proc/self/root" + b.home + "/.ssh/id_rsa", leaked: "planted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(t, c.script)
			if c.written != "" {
				if _, err := os.Stat(c.written); err == nil {
					t.Fatalf("%s: wrote %s outside the workspace (exit %d):\n%s", c.script, c.written, r.code, r.out)
				}
				if r.code == 0 {
					t.Fatalf("%s: exit 0; want the write refused:\n%s", c.script, r.out)
				}
			}
			if c.leaked != "" && strings.Contains(r.out, c.leaked) {
				t.Fatalf("%s: read the secret:\n%s", c.script, r.out)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		r := b.run(t, "echo inside > made.txt && mkdir -p sub && echo tmp > /tmp/t && cat /tmp/t made.txt && ls /usr/bin/env")
		if r.code != 0 || !strings.Contains(r.out, "tmp\ninside") {
			t.Fatalf("writes in the workspace and /tmp, reads elsewhere: exit %d:\n%s", r.code, r.out)
		}
		if got, _ := os.ReadFile(filepath.Join(b.ws, "made.txt")); string(got) != "inside\n" {
			t.Fatalf("made.txt = %q", got)
		}
	})
	t.Run("explained", func(t *testing.T) {
		r := b.run(t, "echo x > "+b.outside+"/abs")
		notes := strings.Join(b.sb.Explain(r.out), "\n")
		if !strings.Contains(notes, "may write only in "+b.ws) {
			t.Fatalf("notes for a refused write: %q (output %q)", notes, r.out)
		}
		r = b.run(t, "cat "+b.home+"/.ssh/id_rsa")
		if notes := strings.Join(b.sb.Explain(r.out), "\n"); !strings.Contains(notes, filepath.Join(b.home, ".ssh")+" is hidden") {
			t.Fatalf("notes for a hidden key: %q (output %q)", notes, r.out)
		}
	})
}

// TestNetwork: with no allow-list nothing is reachable, not even a name;
// with one, the allowed loopback server answers through the proxy and
// the other is refused, named, and never reached.
func TestNetwork(t *testing.T) {
	t.Parallel()
	var deniedHits atomic.Int64
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		deniedHits.Add(1)
		fmt.Fprint(w, "denied server reached")
	}))
	t.Cleanup(denied.Close) // the subtests run after this function returns
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello from the allowed server")
	}))
	t.Cleanup(allowed.Close)
	allowedHost := strings.TrimPrefix(allowed.URL, "http://")
	deniedHost := strings.TrimPrefix(denied.URL, "http://")

	t.Run("none", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r := b.run(t, "curl -sS --max-time 5 "+allowed.URL+"; getent hosts example.com || echo no-dns; (exec 3<>/dev/tcp/"+
			strings.ReplaceAll(allowedHost, ":", "/")+") 2>&1 || echo no-tcp")
		if strings.Contains(r.out, "hello from") || !strings.Contains(r.out, "no-dns") || !strings.Contains(r.out, "no-tcp") {
			t.Fatalf("with no allow-list the network was reachable:\n%s", r.out)
		}
	})
	for _, relay := range []string{"socat", "helper"} {
		t.Run("allow-list/"+relay, func(t *testing.T) {
			t.Parallel()
			b := setup(t, allowedHost)
			if relay == "helper" {
				b.sb.socat = "" // arbor's own binary relays, as where socat is missing
			} else if b.sb.socat == "" {
				t.Fatal("socat is not installed (bash scripts/test.sh installs it)")
			}
			r := b.run(t, "curl -sS --max-time 20 "+allowed.URL+"/x")
			if r.code != 0 || !strings.Contains(r.out, "hello from the allowed server") {
				t.Fatalf("the allowed server through the proxy: exit %d:\n%s", r.code, r.out)
			}
			r = b.run(t, "curl -sS --max-time 20 -o /dev/null -w '%{http_code}' "+denied.URL+"/x; echo; curl -sS --max-time 5 --noproxy '*' "+denied.URL+" || echo direct-refused")
			if !strings.Contains(r.out, "403") || !strings.Contains(r.out, "direct-refused") {
				t.Fatalf("the denied server: want 403 through the proxy and no direct way:\n%s", r.out)
			}
			if len(r.blocked) != 1 || !strings.Contains(r.blocked[0], "network access to "+deniedHost+" was blocked") {
				t.Fatalf("blocked %v; want %s named", r.blocked, deniedHost)
			}
			if n := deniedHits.Load(); n != 0 {
				t.Fatalf("the denied server was reached %d times", n)
			}
			r = b.run(t, "curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://example.invalid/")
			if !strings.Contains(r.out, "403") || len(r.blocked) != 1 || !strings.Contains(r.blocked[0], "example.invalid:80") {
				t.Fatalf("an arbitrary host name: want it refused by name, got %v:\n%s", r.blocked, r.out)
			}
			// The relay is no child of the command: a shell that waits for
			// all of its children ends, and the exit status is the command's.
			r = b.run(t, "sleep 0.1 & wait; exit 7")
			if r.code != 7 {
				t.Fatalf("wait and exit 7 under the relay: exit %d:\n%s", r.code, r.out)
			}
		})
	}
}

// TestProcesses: a process that left the call's session dies with the
// call, and a fork bomb ends the call, not the machine.
func TestProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("setsid-nohup", func(t *testing.T) {
		marker := strconv.Itoa(900000 + os.Getpid()%99999)
		r := b.run(t, "setsid nohup sleep "+marker+" >/dev/null 2>&1 & disown; echo started")
		if !strings.Contains(r.out, "started") {
			t.Fatalf("exit %d:\n%s", r.code, r.out)
		}
		// The kernel kills the namespace's processes as its init exits;
		// they are gone by the time bubblewrap has exited, or very soon.
		deadline := time.Now().Add(5 * time.Second)
		for pids := sleeping(marker); len(pids) > 0; pids = sleeping(marker) {
			if time.Now().After(deadline) {
				t.Fatalf("sleep %s outlived its call: pids %v", marker, pids)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("fork-bomb", func(t *testing.T) {
		sb, err := New(Policy{Workspace: b.ws, MaxProcesses: 100})
		must(t, err)
		defer sb.Close()
		bomb := &bundle{ws: b.ws, sb: sb}
		r := bomb.run(t, "bomb() { bomb | bomb & }; bomb; sleep 100")
		if r.code == 0 || len(r.blocked) != 1 || !strings.Contains(r.blocked[0], "more than 100 processes at once") {
			t.Fatalf("a fork bomb: exit %d, blocked %q:\n%.2000s", r.code, r.blocked, r.out)
		}
	})
}

// TestMemory: a call whose processes take more memory than the limit
// ends, named, and the next call runs.
func TestMemory(t *testing.T) {
	t.Parallel()
	if _, err := Detect(); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	sb, err := New(Policy{Workspace: ws, MaxMemory: 64 << 20})
	must(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	b := &bundle{ws: ws, sb: sb}
	// bash keeps the whole substitution in memory: 1 GiB of it.
	r := b.run(t, `x=$(head -c 1073741824 /dev/zero | tr '\0' a); echo ${#x}`)
	if r.code == 0 || len(r.blocked) != 1 || !strings.Contains(r.blocked[0], "more than 64 MiB of memory") {
		t.Fatalf("a runaway allocation: exit %d, blocked %q:\n%.2000s", r.code, r.blocked, r.out)
	}
	r = b.run(t, `x=$(head -c 1048576 /dev/zero | tr '\0' a); echo ${#x}`)
	if r.code != 0 || len(r.blocked) != 0 || strings.TrimSpace(r.out) != "1048576" {
		t.Fatalf("1 MiB under a 64 MiB limit: exit %d, blocked %q:\n%s", r.code, r.blocked, r.out)
	}
	for n, want := range map[int64]string{512: "512 B", 64 << 20: "64 MiB", 5 << 29: "2.5 GiB", 2 << 30: "2 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// sleeping lists the pids of live `sleep marker` processes.
func sleeping(marker string) []int {
	var pids []int
	ds, _ := os.ReadDir("/proc")
	for _, d := range ds {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "sleep\x00"+marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie: dead
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestModes: mode names, and what New says where the policy is wrong.
func TestModes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{"": Auto, "off": Off, "AUTO": Auto, " required ": Required} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("on"); err == nil {
		t.Error("ParseMode(on) took it")
	}
	if _, err := New(Policy{Workspace: t.TempDir(), Allow: []string{"bad host!"}}); err == nil {
		t.Error("New took a bad allow-list entry")
	}
}

// TestParseSize: the sizes a config may give.
func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"512": 512, "512MiB": 512 << 20, "2GiB": 2 << 30, "1.5G": 3 << 29, "800M": 800 << 20, "64 mb": 64 << 20, "1k": 1024} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "-1G", "2X", "1e30G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) took it", bad)
		}
	}
}
