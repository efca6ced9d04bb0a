package tool

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// Caps of edit.
const (
	// editMaxFileBytes is the largest file edit will load.
	editMaxFileBytes = 16 << 20
	// editMaxQuoteChars caps how much of old_string an error quotes back.
	editMaxQuoteChars = 300
)

type editArgs struct {
	Path       string `json:"path" jsonschema_description:"File to edit: relative to the workspace root, or absolute."`
	OldString  string `json:"old_string" jsonschema_description:"Exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is set."`
	NewString  string `json:"new_string" jsonschema_description:"Text to put in its place. Must differ from old_string."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence instead of requiring exactly one."`
}

func (a editArgs) Target() Target { return Target{Paths: []string{a.Path}} }

const editDescription = `Replace exact text in a file. old_string must match the file byte for byte and, unless replace_all is true, ` +
	`occur exactly once: include enough surrounding lines to make it unique. Use write_file to create new files.`

func newEdit(root workRoot) Tool {
	return New("edit", editDescription, KindWrite, func(_ context.Context, _ Call, a editArgs) Result {
		return root.edit(a)
	})
}

func (w workRoot) edit(a editArgs) Result {
	switch {
	case a.Path == "":
		return Errorf("path is empty")
	case a.OldString == "":
		return Errorf("old_string is empty; to create a file or replace all of it use write_file")
	case a.OldString == a.NewString:
		return Errorf("old_string and new_string are the same; nothing to change")
	}
	p := w.abs(a.Path)
	info, err := os.Stat(p)
	if err != nil {
		return pathError(a.Path, err)
	}
	switch {
	case info.IsDir():
		return Errorf("%s is a directory; edit works on files", a.Path)
	case info.Size() > editMaxFileBytes:
		return Errorf("%s is too large to edit (%d bytes; the limit is %d)", a.Path, info.Size(), editMaxFileBytes)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return pathError(a.Path, err)
	}
	if looksBinary(data[:min(len(data), binarySniffBytes)]) {
		return Errorf("%s is a binary file; edit only changes text", a.Path)
	}
	content := string(data)
	n := strings.Count(content, a.OldString)
	switch {
	case n == 0:
		quote, cut := cutRunes(a.OldString, editMaxQuoteChars)
		if cut {
			quote += "…"
		}
		return Errorf("old_string not found in %s: %q (it must match exactly, including whitespace; read the file again to copy the current text)", a.Path, quote)
	case n > 1 && !a.ReplaceAll:
		return Errorf("old_string occurs %d times in %s; add surrounding context to make it unique, or set replace_all to replace every occurrence", n, a.Path)
	}
	if a.ReplaceAll {
		content = strings.ReplaceAll(content, a.OldString, a.NewString)
	} else {
		content = strings.Replace(content, a.OldString, a.NewString, 1)
	}
	if err := os.WriteFile(p, []byte(content), info.Mode().Perm()); err != nil {
		return pathError(a.Path, err)
	}
	return Result{Content: fmt.Sprintf("replaced %s in %s", plural(n, "occurrence"), a.Path)}
}
