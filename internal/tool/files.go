package tool

import (
	"bufio"
	"context"
	"path/filepath"
	"strings"
)

// Files reads and writes text files for read_file, write_file and edit
// when a client owns them: an editor over ACP serves its open buffers,
// unsaved changes included, and shows the writes in them. Paths are absolute. The
// permission decorator decides before either is called, as for the disk.
type Files interface {
	ReadTextFile(ctx context.Context, path string) (string, error)
	WriteTextFile(ctx context.Context, path, content string) error
}

// writeThrough is write_file through files. Parent directories are made
// on the disk first, which the client's write needs as the disk's does.
func (w workRoot) writeThrough(ctx context.Context, files Files, a writeFileArgs) Result {
	if a.Path == "" {
		return Errorf("path is empty")
	}
	p := w.abs(a.Path)
	if info, err := w.statAt(p); err == nil && info.IsDir() {
		return Errorf("%s is a directory; give a file path", a.Path)
	}
	if err := w.mkdirAllAt(filepath.Dir(p)); err != nil {
		return pathError(filepath.Dir(a.Path), err)
	}
	if err := files.WriteTextFile(ctx, p, a.Content); err != nil {
		return Errorf("write %s through the client: %v", a.Path, err)
	}
	return Result{Content: "wrote " + a.Path + " (" + plural(len(a.Content), "byte") + ")"}
}

// editThrough is edit through files: the text edited is the client's
// (an editor's buffer), and so is the write.
func (w workRoot) editThrough(ctx context.Context, files Files, a editArgs) Result {
	ops, msg := editOps(a)
	if msg != "" {
		return Errorf("%s", msg)
	}
	p := w.abs(a.Path)
	text, err := files.ReadTextFile(ctx, p)
	if err != nil {
		return Errorf("read %s through the client: %v", a.Path, err)
	}
	if len(text) > editMaxFileBytes {
		return Errorf("%s is too large to edit (%d bytes; the limit is %d)", a.Path, len(text), editMaxFileBytes)
	}
	content, res := applyEdits(text, a.Path, ops)
	if res.IsError {
		return res
	}
	if err := files.WriteTextFile(ctx, p, content); err != nil {
		return Errorf("write %s through the client: %v", a.Path, err)
	}
	return res
}

// readThrough is read_file through files: the client's text (an editor's
// buffer, unsaved changes included), numbered as from the disk.
func (w workRoot) readThrough(ctx context.Context, files Files, a readFileArgs) Result {
	if a.Path == "" {
		return Errorf("path is empty")
	}
	p := w.abs(a.Path)
	if info, err := w.statAt(p); err == nil && info.IsDir() {
		return Errorf("%s is a directory; use list_directory", a.Path)
	}
	text, err := files.ReadTextFile(ctx, p)
	if err != nil {
		return Errorf("read %s through the client: %v", a.Path, err)
	}
	br := bufio.NewReader(strings.NewReader(text))
	if binary, _ := sniffBinary(br); binary {
		return Errorf("%s is a binary file; read_file only shows text", a.Path)
	}
	return numbered(br, a)
}
