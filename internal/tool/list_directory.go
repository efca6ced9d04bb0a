package tool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// listMaxEntries caps one list_directory result.
const listMaxEntries = 1000

type listDirectoryArgs struct {
	Path string `json:"path,omitempty" jsonschema_description:"Directory to list: relative to the workspace root, or absolute. Default: the workspace root."`
}

// Target names the directory; the workspace root is ".".
func (a listDirectoryArgs) Target() Target { return Target{Paths: []string{cmp.Or(a.Path, ".")}} }

const listDirectoryDescription = `List a directory: one entry per line, sorted by name, directories with a trailing "/", ` +
	`files with their size in bytes, symbolic links with their target. At most 1000 entries are shown.`

func newListDirectory(root workRoot) Tool {
	return New("list_directory", listDirectoryDescription, KindRead, func(_ context.Context, _ Call, a listDirectoryArgs) Result {
		return root.listDirectory(a)
	})
}

func (w workRoot) listDirectory(a listDirectoryArgs) Result {
	given := cmp.Or(a.Path, ".")
	pl, err := w.locate(w.abs(given))
	if err != nil {
		return pathError(given, err)
	}
	defer pl.Close()
	dir, err := pl.open(os.O_RDONLY, 0)
	if errors.Is(err, ErrNotRegular) {
		return Errorf("%s is not a directory", given)
	}
	if err != nil {
		return pathError(given, err)
	}
	defer dir.Close()
	if info, err := dir.Stat(); err != nil || !info.IsDir() {
		return Errorf("%s is not a directory; use read_file", given)
	}
	// Read everything to sort by name, but keep only names and types:
	// a directory of a million files costs memory for names, not for stats.
	var entries []fs.DirEntry
	for {
		batch, err := dir.ReadDir(4096)
		entries = append(entries, batch...)
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			return pathError(given, err)
		}
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		return w.hidden("list_directory", filepath.Join(pl.abs, e.Name()))
	})
	if len(entries) == 0 {
		return Result{Content: fmt.Sprintf("(%s is empty)", given)}
	}
	slices.SortFunc(entries, func(x, y fs.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })

	var out strings.Builder
	for i, e := range entries {
		if i == listMaxEntries {
			fmt.Fprintf(&out, "[… %d more entries not shown]\n", len(entries)-listMaxEntries)
			break
		}
		out.WriteString(describeEntry(pl, e))
		out.WriteByte('\n')
	}
	return Result{Content: out.String()}
}

// describeEntry is one line of a listing of the directory of pl; the
// entry is looked at through pl's root, as the directory was opened.
func describeEntry(pl place, e fs.DirEntry) string {
	name := e.Name()
	p := filepath.Join(pl.name, name)
	switch {
	case e.IsDir():
		return name + "/"
	case e.Type()&fs.ModeSymlink != 0:
		target, err := pl.root.Readlink(p)
		if err != nil {
			return name + " -> ?"
		}
		return name + " -> " + target
	case !e.Type().IsRegular():
		return name + " (" + e.Type().String() + ")"
	}
	info, err := pl.root.Lstat(p)
	if err != nil {
		return name
	}
	return fmt.Sprintf("%s (%s)", name, plural(int(info.Size()), "byte"))
}
