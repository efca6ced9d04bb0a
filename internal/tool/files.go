package tool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// Files reads and writes text files for read_file, write_file and edit
// when a client owns them: an editor over ACP serves its open buffers,
// unsaved changes included, and shows the writes in them. Paths are absolute. The
// permission decorator decides before either is called, as for the disk.
//
// The client opens the path itself and follows its symlinks, where the
// disk's tools open through an os.Root that refuses to (confine.go). So
// a path is handed over with the symlinks below its root resolved, one
// that a symlink leads out of the workspace is refused as on the disk,
// and a read whose path resolves elsewhere once the client has answered
// (a symlink swapped in meanwhile) is discarded.
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
	detail := &FileDetail{Path: p, After: a.Content}
	info, err := w.statAt(p)
	switch {
	case err == nil && info.IsDir():
		return Errorf("%s is a directory; give a file path", a.Path)
	case err == nil:
		// The disk's text: asking the client for its buffer would add a
		// request to the write.
		if wantsDetail(ctx) {
			detail.Before, detail.Existed = w.oldText(p)
		}
	}
	if err := w.mkdirAllAt(filepath.Dir(p)); err != nil {
		return pathError(filepath.Dir(a.Path), err)
	}
	p, err = w.through(p)
	if err != nil {
		return pathError(a.Path, err)
	}
	if err := files.WriteTextFile(ctx, p, a.Content); err != nil {
		return Errorf("write %s through the client: %v", a.Path, err)
	}
	return Result{Content: "wrote " + a.Path + " (" + plural(len(a.Content), "byte") + ")", Detail: &Detail{File: detail}}
}

// editThrough is edit through files: the text edited is the client's
// (an editor's buffer), and so is the write.
func (w workRoot) editThrough(ctx context.Context, files Files, a editArgs) Result {
	ops, msg := editOps(a)
	if msg != "" {
		return Errorf("%s", msg)
	}
	p, text, err := w.readClient(ctx, files, w.abs(a.Path))
	if err != nil {
		return throughError(a.Path, err)
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
	res.Detail = &Detail{File: &FileDetail{Path: p, Existed: true, Before: text, After: content}}
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
	_, text, err := w.readClient(ctx, files, p)
	if err != nil {
		return throughError(a.Path, err)
	}
	nl, r := countNewlines(strings.NewReader(text), wantsDetail(ctx))
	br := bufio.NewReader(r)
	if binary, _ := sniffBinary(br); binary {
		return Errorf("%s is a binary file; read_file only shows text", a.Path)
	}
	return numbered(br, nl, p, a)
}

// through is the path to hand a client for the absolute path p: the
// symlinks below its root resolved, the root as the workspace was given
// (the client knows its buffers by that name). A path in the workspace
// that resolves out of every root is refused (ErrLeavesWorkspace), and
// so is a file that is not a regular one, which a client would wait on
// for ever. A path outside every root is the one the decision named:
// resolved whole.
func (w workRoot) through(p string) (string, error) {
	real := resolveExisting(p)
	if info, err := w.statAt(p); err == nil && !info.IsDir() && !info.Mode().IsRegular() {
		return "", &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describeMode(info.Mode()))}
	}
	given := w.rootOf(p)
	if given == "" {
		return real, nil
	}
	if r, err := filepath.EvalSymlinks(given); err == nil && within(r, real) {
		rel, _ := filepath.Rel(r, real)
		return filepath.Join(given, rel), nil
	}
	if w.rootOf(real) != "" {
		return real, nil
	}
	return "", &fs.PathError{Op: "open", Path: p, Err: ErrLeavesWorkspace}
}

// readClient reads the absolute path p through files, as through names
// it; the text is discarded when the path no longer resolves to what was
// handed over once the client has answered.
func (w workRoot) readClient(ctx context.Context, files Files, p string) (string, string, error) {
	q, err := w.through(p)
	if err != nil {
		return "", "", err
	}
	text, err := files.ReadTextFile(ctx, q)
	if err != nil {
		return "", "", clientError{err}
	}
	if again, err := w.through(p); err != nil || again != q {
		return "", "", &fs.PathError{Op: "read", Path: p, Err: errSwapped}
	}
	return q, text, nil
}

// errSwapped: a path resolved elsewhere after the client read it.
var errSwapped = errors.New("a symlink on its path changed while the client read it")

// clientError is the client's own answer to a read (a JSON-RPC error).
type clientError struct{ err error }

func (e clientError) Error() string { return e.err.Error() }

// throughError is the result of a read through the client that failed.
func throughError(given string, err error) Result {
	if ce, ok := err.(clientError); ok {
		return Errorf("read %s through the client: %v", given, ce.err)
	}
	return pathError(given, err)
}
