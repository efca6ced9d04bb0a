package tool

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// buffers is a client's open buffers: what it holds differs from the disk
// until it saves.
type buffers struct {
	mu     sync.Mutex
	text   map[string]string
	writes []string
}

func (b *buffers) ReadTextFile(_ context.Context, path string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
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
}
