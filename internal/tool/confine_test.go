package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/arbor-run/arbor/internal/permission"
)

// swapBundle is a workspace whose directory d the test swaps for a
// symlink to a directory outside, and the guarded built-ins over it.
type swapBundle struct {
	ws, outside string
	tools       map[string]Tool
}

// swapPolicy decides with the real engine, then (when armed) swaps the
// workspace's d for a symlink out of it: what a background job could do
// between the decision and the tool's open.
type swapPolicy struct {
	*permission.Engine
	swap func()
}

func (p swapPolicy) Decide(r permission.Request) permission.Decision {
	d := p.Engine.Decide(r)
	if p.swap != nil {
		p.swap()
	}
	return d
}

// setupSwap makes ws/d/f.txt ("inside") and outside/{f.txt,secret,pic.png},
// and the built-ins guarded in trust mode by a policy that swaps d for a
// symlink to outside after each decision when swap is set.
func setupSwap(t *testing.T, swap bool) *swapBundle {
	t.Helper()
	root := t.TempDir()
	b := &swapBundle{ws: filepath.Join(root, "ws"), outside: filepath.Join(root, "outside"), tools: map[string]Tool{}}
	for _, f := range []struct{ path, content string }{
		{filepath.Join(b.ws, "d", "f.txt"), "inside\n"},
		{filepath.Join(b.outside, "f.txt"), "OUTSIDE\n"},
		{filepath.Join(b.outside, "secret"), "OUTSIDE secret\n"},
		{filepath.Join(b.outside, "pic.png"), string(pngBytes(t))},
	} {
		must(t, os.MkdirAll(filepath.Dir(f.path), 0o755))
		must(t, os.WriteFile(f.path, []byte(f.content), 0o644))
	}
	e, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: b.ws})
	must(t, err)
	p := swapPolicy{Engine: e}
	if swap {
		p.swap = func() {
			must(t, os.Rename(filepath.Join(b.ws, "d"), filepath.Join(b.ws, "d.real")))
			must(t, os.Symlink(b.outside, filepath.Join(b.ws, "d")))
		}
	}
	for _, tl := range Builtins(BuiltinOptions{Workspace: b.ws}) {
		b.tools[Name(tl)] = Guard(tl, p, nil)
	}
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func pngBytes(t *testing.T) []byte {
	var buf bytes.Buffer
	must(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))))
	return buf.Bytes()
}

func (b *swapBundle) call(t *testing.T, name string, args any) Result {
	t.Helper()
	raw, err := json.Marshal(args)
	must(t, err)
	return b.tools[name].Run(context.Background(), Call{ID: "c", Input: raw})
}

// TestFileToolsStayInsideWhenASymlinkIsSwappedIn: a directory the
// permission check saw inside the workspace and that became a symlink out
// of it before the tool opened it takes no file tool out: nothing outside
// is written, deleted or shown. The same calls without the swap work.
func TestFileToolsStayInsideWhenASymlinkIsSwappedIn(t *testing.T) {
	t.Parallel()
	patch := "*** Begin Patch\n*** Update File: d/f.txt\n@@\n-OUTSIDE\n+PWNED\n*** Add File: d/new.txt\n+PWNED\n*** End Patch"
	for _, c := range []struct {
		name string
		tool string
		args any
		// works is what the call's result holds without the swap
		works string
	}{
		{"write_file", "write_file", writeFileArgs{Path: "d/f.txt", Content: "PWNED\n"}, "overwrote"},
		{"write_file-new", "write_file", writeFileArgs{Path: "d/new.txt", Content: "PWNED\n"}, "created"},
		{"read_file", "read_file", readFileArgs{Path: "d/f.txt"}, "inside"},
		{"edit", "edit", editArgs{Path: "d/f.txt", OldString: "OUTSIDE", NewString: "PWNED"}, "not found"},
		{"apply_patch", "apply_patch", applyPatchArgs{Patch: patch}, "were not found"},
		{"delete", "delete", deleteArgs{Paths: []string{"d/f.txt"}, Reason: "test"}, "deleted: d/f.txt"},
		{"grep", "grep", grepArgs{Pattern: "TSIDE|nside", Path: "d"}, "inside"},
		{"grep-file", "grep", grepArgs{Pattern: "TSIDE|nside", Path: "d/f.txt"}, "inside"},
		{"glob", "glob", globArgs{Pattern: "**", Path: "d"}, "f.txt"},
		{"list_directory", "list_directory", listDirectoryArgs{Path: "d"}, "f.txt"},
		{"view_image", "view_image", viewImageArgs{Path: "d/pic.png"}, "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setupSwap(t, false)
			if r := b.call(t, c.tool, c.args); !strings.Contains(r.Content, c.works) {
				t.Fatalf("%s without a swap: %q; want %q in it", c.tool, r.Content, c.works)
			}
			b = setupSwap(t, true)
			r := b.call(t, c.tool, c.args)
			if strings.Contains(r.Content, "OUTSIDE") || strings.Contains(r.Content, "secret") || len(r.Images) > 0 {
				t.Fatalf("%s through the swapped-in symlink showed the outside directory: %q", c.tool, r.Content)
			}
			for name, want := range map[string]string{"f.txt": "OUTSIDE\n", "secret": "OUTSIDE secret\n"} {
				got, err := os.ReadFile(filepath.Join(b.outside, name))
				if err != nil || string(got) != want {
					t.Fatalf("%s through the swapped-in symlink changed outside/%s: %q, %v (result %q)", c.tool, name, got, err, r.Content)
				}
			}
			if _, err := os.Stat(filepath.Join(b.outside, "new.txt")); err == nil {
				t.Fatalf("%s through the swapped-in symlink created outside/new.txt (result %q)", c.tool, r.Content)
			}
		})
	}
}

// TestWriteFileRacingASwap: a swap racing the calls, as a job looping in
// the background would make it: the write lands inside or is refused,
// never outside.
func TestWriteFileRacingASwap(t *testing.T) {
	t.Parallel()
	b := setupSwap(t, false)
	d, link := filepath.Join(b.ws, "d"), filepath.Join(b.ws, "d.link")
	must(t, os.Symlink(b.outside, link))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// d and d.link trade places atomically: d is a directory or
			// the symlink out, never missing.
			_ = unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	})
	for range 400 {
		b.call(t, "write_file", writeFileArgs{Path: "d/raced.txt", Content: "PWNED\n"})
	}
	close(stop)
	wg.Wait()
	if _, err := os.Stat(filepath.Join(b.outside, "raced.txt")); err == nil {
		t.Fatal("write_file wrote outside the workspace through a symlink swapped in after its check")
	}
}

// TestFileToolsRefuseFIFOs: a FIFO in the workspace is refused at once by
// the tools that read or write files, rather than waiting for a writer
// or reader that never comes.
func TestFileToolsRefuseFIFOs(t *testing.T) {
	t.Parallel()
	b := setupSwap(t, false)
	must(t, syscall.Mkfifo(filepath.Join(b.ws, "fifo"), 0o644))
	for _, c := range []struct {
		tool string
		args any
	}{
		{"read_file", readFileArgs{Path: "fifo"}},
		{"write_file", writeFileArgs{Path: "fifo", Content: "x"}},
		{"edit", editArgs{Path: "fifo", OldString: "a", NewString: "b"}},
		{"view_image", viewImageArgs{Path: "fifo"}},
		{"grep", grepArgs{Pattern: "x", Path: "fifo"}},
		{"list_directory", listDirectoryArgs{Path: "fifo"}},
		{"apply_patch", applyPatchArgs{Patch: "*** Begin Patch\n*** Update File: fifo\n@@\n-a\n+b\n*** End Patch"}},
	} {
		t.Run(c.tool, func(t *testing.T) {
			done := make(chan Result, 1)
			go func() { done <- b.call(t, c.tool, c.args) }()
			select {
			case r := <-done:
				if c.tool != "grep" && !r.IsError {
					t.Fatalf("%s of a FIFO: %q; want it refused", c.tool, r.Content)
				}
			case <-time.After(hangGuard):
				t.Fatalf("%s of a FIFO still waits after %s", c.tool, hangGuard)
			}
		})
	}
}

// hangGuard bounds a call that a bug would leave waiting; a working tool
// never reaches it.
const hangGuard = 2 * time.Minute

// TestFileToolsFollowSymlinksThatStayInside: a symlink in the workspace
// whose target, absolute or relative, is in the workspace or an added
// directory is followed; one out of them is not, even where a rule
// allows its target, and the refusal says to name the target.
func TestFileToolsFollowSymlinksThatStayInside(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, added, outside := filepath.Join(root, "ws"), filepath.Join(root, "added"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(ws, "sub"), added, outside} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(ws, "sub", "f.txt"), []byte("in sub\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(added, "g.txt"), []byte("in added\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "h.txt"), []byte("outside\n"), 0o644))
	must(t, os.Symlink(filepath.Join(ws, "sub"), filepath.Join(ws, "abs")))
	must(t, os.Symlink("sub", filepath.Join(ws, "rel")))
	must(t, os.Symlink(added, filepath.Join(ws, "toadded")))
	must(t, os.Symlink(outside, filepath.Join(ws, "out")))
	e, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: ws, Roots: []string{added}})
	must(t, err)
	must(t, e.AddRule(permission.Rule{Tool: "read_file", Pattern: outside + "/**", Action: permission.Allow, Scope: permission.ScopeSession}))
	b := &swapBundle{ws: ws, outside: outside, tools: map[string]Tool{}}
	for _, tl := range Builtins(BuiltinOptions{Workspace: ws, Roots: []string{added}}) {
		b.tools[Name(tl)] = Guard(tl, e, nil)
	}
	for _, c := range []struct{ path, want string }{
		{"abs/f.txt", "in sub"}, {"rel/f.txt", "in sub"}, {"toadded/g.txt", "in added"},
		{filepath.Join(added, "g.txt"), "in added"}, {filepath.Join(outside, "h.txt"), "outside"},
	} {
		if r := b.call(t, "read_file", readFileArgs{Path: c.path}); r.IsError || !strings.Contains(r.Content, c.want) {
			t.Fatalf("read_file %s: %q; want %q", c.path, r.Content, c.want)
		}
	}
	if r := b.call(t, "write_file", writeFileArgs{Path: "abs/new.txt", Content: "x"}); r.IsError {
		t.Fatalf("write_file abs/new.txt: %q", r.Content)
	}
	if r := b.call(t, "write_file", writeFileArgs{Path: filepath.Join(added, "new.txt"), Content: "x"}); r.IsError {
		t.Fatalf("write_file in the added directory: %q", r.Content)
	}
	r := b.call(t, "read_file", readFileArgs{Path: "out/h.txt"})
	if !r.IsError || !strings.Contains(r.Content, "give the path it points to") {
		t.Fatalf("read_file out/h.txt (a symlink out, its target allowed by a rule): %q; want it refused, naming why", r.Content)
	}
}

// TestWalksDoNotFollowLinks: glob and grep over a workspace holding a
// symlink loop and a symlink out end, and show nothing of the outside.
func TestWalksDoNotFollowLinks(t *testing.T) {
	t.Parallel()
	b := setupSwap(t, false)
	must(t, os.Symlink(".", filepath.Join(b.ws, "d", "loop")))
	must(t, os.Symlink(b.outside, filepath.Join(b.ws, "d", "out")))
	for _, c := range []struct {
		tool string
		args any
	}{
		{"glob", globArgs{Pattern: "**"}},
		{"glob", globArgs{Pattern: "**/*.txt", Path: "d"}},
		{"grep", grepArgs{Pattern: "TSIDE|nside"}},
		{"grep", grepArgs{Pattern: "TSIDE|nside", Include: "*.txt", Path: "d"}},
	} {
		r := b.call(t, c.tool, c.args)
		if r.IsError || !strings.Contains(r.Content, "f.txt") {
			t.Fatalf("%s %+v: %q; want d/f.txt found", c.tool, c.args, r.Content)
		}
		if strings.Contains(r.Content, "OUTSIDE") || strings.Contains(r.Content, "secret") || strings.Contains(r.Content, "loop/") {
			t.Fatalf("%s %+v followed a symlink: %q", c.tool, c.args, r.Content)
		}
	}
}

// TestOddPaths: a path with a NUL is refused, one with a newline or a
// leading ~ or a trailing slash names a file in the workspace, and
// /proc/self/root or /proc/self/cwd in front of a path outside does not
// make it inside (these held; the test keeps them).
func TestOddPaths(t *testing.T) {
	t.Parallel()
	b := setupSwap(t, false)
	if r := b.call(t, "write_file", writeFileArgs{Path: "a\x00b", Content: "x"}); !r.IsError {
		t.Fatalf("write_file of a path with a NUL: %q; want it refused", r.Content)
	}
	for _, p := range []string{"new\nline.txt", "~/tilde.txt", "d/slash.txt/"} {
		if r := b.call(t, "write_file", writeFileArgs{Path: p, Content: "x"}); r.IsError {
			t.Fatalf("write_file %q: %q", p, r.Content)
		}
		if _, err := os.Stat(filepath.Join(b.ws, filepath.Clean(p))); err != nil {
			t.Fatalf("write_file %q made no file in the workspace: %v", p, err)
		}
	}
	for _, p := range []string{"/proc/self/root" + b.outside + "/f.txt", "/proc/self/cwd/../../../../../../../.." + b.outside + "/f.txt",
		"/dev/fd/../../proc/self/root" + b.outside + "/f.txt"} {
		r := b.call(t, "read_file", readFileArgs{Path: p})
		if !r.IsError || strings.Contains(r.Content, "OUTSIDE") {
			t.Fatalf("read_file %s: %q; want it refused", p, r.Content)
		}
	}
}
