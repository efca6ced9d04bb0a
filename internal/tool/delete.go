package tool

import (
	"context"
	"errors"
	"io/fs"
	"strings"
)

type deleteArgs struct {
	Paths  []string `json:"paths" jsonschema_description:"Files or symlinks to delete: relative to the workspace root, or absolute. Not directories, not patterns."`
	Reason string   `json:"reason" jsonschema_description:"Why these files should go, in a few words."`
}

func (a deleteArgs) Target() Target { return Target{Paths: a.Paths} }

const deleteDescription = `Delete files or symlinks (a symlink itself, not what it points to). ` +
	`Use it to remove files rather than writing them empty. Directories and patterns are refused.`

func newDelete(root workRoot) Tool {
	return New("delete", deleteDescription, KindWrite, func(_ context.Context, _ Call, a deleteArgs) Result {
		return root.delete(a)
	})
}

// delete removes each path it can and reports every one: deleted, already
// absent, or why not.
func (w workRoot) delete(a deleteArgs) Result {
	if strings.TrimSpace(a.Reason) == "" {
		return Errorf("reason is empty: say in a few words why these files should go")
	}
	if len(a.Paths) == 0 {
		return Errorf("paths is empty")
	}
	var deleted, absent, failed []string
	seen := map[string]bool{}
	for _, given := range a.Paths {
		if strings.TrimSpace(given) == "" || seen[given] {
			continue
		}
		seen[given] = true
		switch err := w.remove(given); {
		case errors.Is(err, fs.ErrNotExist):
			absent = append(absent, given)
		case errors.Is(err, errIsDir):
			failed = append(failed, given+" is a directory; delete removes files only")
		case err != nil:
			failed = append(failed, pathError(given, err).Content)
		default:
			deleted = append(deleted, given)
		}
	}
	var b strings.Builder
	line := func(label string, items []string) {
		if len(items) > 0 {
			b.WriteString(label + ": " + strings.Join(items, ", ") + "\n")
		}
	}
	line("deleted", deleted)
	line("already absent", absent)
	line("not deleted", failed)
	r := Result{Content: strings.TrimSuffix(b.String(), "\n")}
	r.IsError = len(failed) > 0
	return r
}

// errIsDir: delete was given a directory.
var errIsDir = errors.New("is a directory")

// remove deletes the file or symlink given, inside its root (confine.go).
func (w workRoot) remove(given string) error {
	pl, err := w.locateLink(w.abs(given))
	if err != nil {
		return err
	}
	defer pl.Close()
	info, err := pl.root.Lstat(pl.name)
	switch {
	case err != nil:
		return err
	case info.IsDir():
		return errIsDir
	}
	return pl.root.Remove(pl.name)
}
