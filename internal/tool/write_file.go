package tool

import (
	"context"
	"errors"
	"io/fs"
)

type writeFileArgs struct {
	Path    string `json:"path" jsonschema_description:"File to write: relative to the workspace root, or absolute. Missing parent directories are created."`
	Content string `json:"content" jsonschema_description:"The complete new content of the file."`
}

func (a writeFileArgs) Target() Target { return Target{Paths: []string{a.Path}} }

const writeFileDescription = `Write a file, replacing it completely if it exists. Parent directories are created as needed. ` +
	`To change part of an existing file, prefer edit.`

func newWriteFile(root workRoot, files Files) Tool {
	return New("write_file", writeFileDescription, KindWrite, func(ctx context.Context, _ Call, a writeFileArgs) Result {
		if files != nil {
			return root.writeThrough(ctx, files, a)
		}
		return root.writeFile(a, wantsDetail(ctx))
	})
}

// writeFile is write_file on the disk; detail says whether to read the
// text it replaces for the result's Detail.
func (w workRoot) writeFile(a writeFileArgs, detail bool) Result {
	if a.Path == "" {
		return Errorf("path is empty")
	}
	pl, err := w.locate(w.abs(a.Path))
	if err != nil {
		return pathError(a.Path, err)
	}
	defer pl.Close()
	mode := fs.FileMode(0o644)
	verb := "created"
	fd := &FileDetail{Path: w.abs(a.Path), After: a.Content}
	info, err := pl.root.Stat(pl.name)
	switch {
	case err == nil && info.IsDir():
		return Errorf("%s is a directory; give a file path", a.Path)
	case err == nil:
		mode = info.Mode().Perm()
		verb = "overwrote"
		if detail {
			fd.Before, fd.Existed = w.oldText(fd.Path)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return pathError(a.Path, err)
	}
	if err := pl.writeFile([]byte(a.Content), mode); err != nil {
		return pathError(a.Path, err)
	}
	return Result{Content: verb + " " + a.Path + " (" + plural(len(a.Content), "byte") + ")", Detail: &Detail{File: fd}}
}

// oldText is the text of the file at the absolute path p before a write,
// for the change's detail; false when it cannot be read or is larger
// than edit loads.
func (w workRoot) oldText(p string) (string, bool) {
	pl, err := w.locate(p)
	if err != nil {
		return "", false
	}
	defer pl.Close()
	old, info, err := pl.readFile(editMaxFileBytes, func(int64) error { return errTooLarge })
	if err != nil || info == nil || info.IsDir() {
		return "", false
	}
	return string(old), true
}
