package tool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// buffers is a client's open buffers: what it holds differs from the disk
// until it saves.
type buffers struct {
	mu     sync.Mutex
	text   map[string]string
	writes []string
	reads  []string
	// onRead, when set, runs as a read is answered (a swap meanwhile).
	onRead func(path string)
}

func (b *buffers) ReadTextFile(_ context.Context, path string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reads = append(b.reads, path)
	if b.onRead != nil {
		b.onRead(path)
	}
	s, ok := b.text[path]
	if !ok {
		return "", errors.New("no such buffer")
	}
	return s, nil
}

func (b *buffers) WriteTextFile(_ context.Context, path, content string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.text[path] = content
	b.writes = append(b.writes, path)
	return nil
}

func TestFilesThroughClient(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*toolFixture, *buffers) {
		f := setupTools(t)
		b := &buffers{text: map[string]string{}}
		f.reg = NewRegistry(Builtins(BuiltinOptions{Workspace: f.root, Files: b})...)
		return f, b
	}

	t.Run("EditReadsAndWritesTheBuffer", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		p := f.write("a.txt", "disk text")
		b.text[p] = "buffer text, unsaved"
		reqEqual(t, reqOK(t, f.call("edit", editArgs{Path: "a.txt", OldString: "unsaved", NewString: "edited"})), "replaced 1 occurrence in a.txt")
		reqEqual(t, b.text[p], "buffer text, edited")
		reqEqual(t, f.read("a.txt"), "disk text") // the client saves, not arbor
	})

	t.Run("EditErrorsWriteNothing", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		p := filepath.Join(f.root, "a.txt")
		b.text[p] = "one one"
		reqErr(t, f.call("edit", editArgs{Path: "a.txt", OldString: "one", NewString: "two"}))
		reqEqual(t, len(b.writes), 0)
		reqErr(t, f.call("edit", editArgs{Path: "missing.txt", OldString: "x", NewString: "y"}))
	})

	t.Run("ReadShowsTheBuffer", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		p := f.write("c.txt", "disk\n")
		b.text[p] = "one\ntwo, unsaved\nthree\n"
		reqEqual(t, reqOK(t, f.call("read_file", readFileArgs{Path: "c.txt", Offset: 2, Limit: 1})),
			"     2\ttwo, unsaved\n[showing lines 2-2; the file continues: read again with offset=3]\n")
		reqErr(t, f.call("read_file", readFileArgs{Path: "missing.txt"}))
	})

	t.Run("WriteGoesToTheClient", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		reqEqual(t, reqOK(t, f.call("write_file", writeFileArgs{Path: "new/b.txt", Content: "hello"})), "wrote new/b.txt (5 bytes)")
		reqEqual(t, b.text[filepath.Join(f.root, "new", "b.txt")], "hello")
		if _, err := os.Stat(filepath.Join(f.root, "new")); err != nil {
			t.Fatalf("the parent directory was not made: %v", err)
		}
	})

	// The client follows symlinks where the disk's tools refuse to: a
	// symlink out of the workspace must not take a read or a write
	// through it out, whatever the client holds for either path.
	t.Run("ASymlinkOutIsRefused", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(f.root, "link")
		if err := os.Symlink(secret, link); err != nil {
			t.Fatal(err)
		}
		b.text[secret], b.text[link] = "secret buffer", "secret buffer"
		for _, res := range []Result{
			f.call("read_file", readFileArgs{Path: "link"}),
			f.call("edit", editArgs{Path: "link", OldString: "secret", NewString: "x"}),
			f.call("write_file", writeFileArgs{Path: "link", Content: "x"}),
		} {
			reqContains(t, reqErr(t, res), "leads out of the workspace")
		}
		reqEqual(t, len(b.reads)+len(b.writes), 0)
	})

	t.Run("ASymlinkInsideIsResolved", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		target := f.write("sub/real.txt", "disk")
		if err := os.Symlink("sub/real.txt", filepath.Join(f.root, "alias")); err != nil {
			t.Fatal(err)
		}
		b.text[target] = "the buffer of real.txt\n"
		reqContains(t, reqOK(t, f.call("read_file", readFileArgs{Path: "alias"})), "the buffer of real.txt")
		reqOK(t, f.call("write_file", writeFileArgs{Path: "alias", Content: "new"}))
		reqEqual(t, len(b.writes), 1)
		reqEqual(t, b.writes[0], target)
	})

	t.Run("TheWorkspaceKeepsItsGivenName", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		real, given := filepath.Join(dir, "real"), filepath.Join(dir, "given")
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, given); err != nil {
			t.Fatal(err)
		}
		b := &buffers{text: map[string]string{filepath.Join(given, "a.txt"): "buffer\n"}}
		f := setupTools(t)
		f.reg = NewRegistry(Builtins(BuiltinOptions{Workspace: given, Files: b})...)
		if err := os.WriteFile(filepath.Join(real, "a.txt"), []byte("disk\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		reqContains(t, reqOK(t, f.call("read_file", readFileArgs{Path: "a.txt"})), "buffer")
	})

	t.Run("AFifoIsRefused", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		if err := syscall.Mkfifo(filepath.Join(f.root, "fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
		reqContains(t, reqErr(t, f.call("read_file", readFileArgs{Path: "fifo"})), "not a regular file")
		reqContains(t, reqErr(t, f.call("write_file", writeFileArgs{Path: "fifo", Content: "x"})), "not a regular file")
		reqEqual(t, len(b.reads)+len(b.writes), 0)
	})

	// A symlink swapped in while the client reads (a background job can
	// write in the workspace) must not hand its target's text back.
	t.Run("ASwapDuringTheReadIsDiscarded", func(t *testing.T) {
		t.Parallel()
		f, b := setup(t)
		p := f.write("a.txt", "disk")
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		b.text[p] = "secret, as the client read it through the swapped link"
		b.onRead = func(string) {
			if err := os.Remove(p); err != nil {
				t.Error(err)
			}
			if err := os.Symlink(secret, p); err != nil {
				t.Error(err)
			}
		}
		out := reqErr(t, f.call("read_file", readFileArgs{Path: "a.txt"}))
		reqContains(t, out, "changed while the client read it")
		if strings.Contains(out, "secret,") {
			t.Fatalf("the swapped read's text came back: %q", out)
		}
	})
}
