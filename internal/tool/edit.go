package tool

import (
	"context"
	"fmt"
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
	Path       string   `json:"path" jsonschema_description:"File to edit: relative to the workspace root, or absolute."`
	OldString  string   `json:"old_string,omitempty" jsonschema_description:"Exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is set."`
	NewString  string   `json:"new_string,omitempty" jsonschema_description:"Text to put in its place. Must differ from old_string."`
	ReplaceAll bool     `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence instead of requiring exactly one."`
	Edits      []editOp `json:"edits,omitempty" jsonschema_description:"Several replacements in this file instead of old_string/new_string: applied in order, each to the result of the one before, all or nothing."`
}

// editOp is one replacement of a multi-edit.
type editOp struct {
	OldString  string `json:"old_string" jsonschema_description:"Exact text to replace."`
	NewString  string `json:"new_string" jsonschema_description:"Text to put in its place."`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema_description:"Replace every occurrence instead of requiring exactly one."`
}

func (a editArgs) Target() Target { return Target{Paths: []string{a.Path}} }

const editDescription = `Replace exact text in a file. old_string must match the file byte for byte and, unless replace_all is true, ` +
	`occur exactly once: include enough surrounding lines to make it unique. For several changes to one file, give edits ` +
	`(a list of old_string/new_string pairs) instead: they apply in order, all or nothing. Use write_file to create new files.`

func newEdit(root workRoot, files Files) Tool {
	return New("edit", editDescription, KindWrite, func(ctx context.Context, _ Call, a editArgs) Result {
		if files != nil {
			return root.editThrough(ctx, files, a)
		}
		return root.edit(a)
	})
}

// editOps checks a's form and returns its replacements; msg says why
// they cannot be made.
func editOps(a editArgs) (ops []editOp, msg string) {
	ops = a.Edits
	switch {
	case a.Path == "":
		return nil, "path is empty"
	case len(ops) > 0 && (a.OldString != "" || a.NewString != "" || a.ReplaceAll):
		return nil, "give old_string/new_string or edits, not both"
	case len(ops) == 0:
		ops = []editOp{{OldString: a.OldString, NewString: a.NewString, ReplaceAll: a.ReplaceAll}}
	}
	return ops, ""
}

func (w workRoot) edit(a editArgs) Result {
	ops, msg := editOps(a)
	if msg != "" {
		return Errorf("%s", msg)
	}
	pl, err := w.locate(w.abs(a.Path))
	if err != nil {
		return pathError(a.Path, err)
	}
	defer pl.Close()
	data, info, err := pl.readFile(editMaxFileBytes, func(size int64) error {
		return fmt.Errorf("%s is too large to edit (%d bytes; the limit is %d)", a.Path, size, editMaxFileBytes)
	})
	switch {
	case err != nil && info != nil:
		return Errorf("%v", err)
	case err != nil:
		return pathError(a.Path, err)
	case info.IsDir():
		return Errorf("%s is a directory; edit works on files", a.Path)
	}
	if looksBinary(data[:min(len(data), binarySniffBytes)]) {
		return Errorf("%s is a binary file; edit only changes text", a.Path)
	}
	content, res := applyEdits(string(data), a.Path, ops)
	if res.IsError {
		return res
	}
	if err := pl.writeFile([]byte(content), info.Mode().Perm()); err != nil {
		return pathError(a.Path, err)
	}
	res.Detail = &Detail{File: &FileDetail{Path: w.abs(a.Path), Existed: true, Before: string(data), After: content}}
	return res
}

// applyEdits makes ops in content, all or none; the result says what was
// done, or why nothing was.
func applyEdits(content, path string, ops []editOp) (string, Result) {
	total := 0
	for i, op := range ops {
		var n int
		var msg string
		if content, n, msg = replaceOnce(content, path, op); msg != "" {
			if len(ops) > 1 {
				msg = fmt.Sprintf("edit %d of %d: %s; no edit was made", i+1, len(ops), msg)
			}
			return "", Errorf("%s", msg)
		}
		total += n
	}
	if len(ops) > 1 {
		return content, Result{Content: fmt.Sprintf("made %s (%s) in %s", plural(len(ops), "edit"), plural(total, "replacement"), path)}
	}
	return content, Result{Content: fmt.Sprintf("replaced %s in %s", plural(total, "occurrence"), path)}
}

// replaceOnce applies one replacement to content; msg says why it cannot.
func replaceOnce(content, path string, op editOp) (string, int, string) {
	switch {
	case op.OldString == "":
		return "", 0, "old_string is empty; to create a file or replace all of it use write_file"
	case op.OldString == op.NewString:
		return "", 0, "old_string and new_string are the same; nothing to change"
	}
	n := strings.Count(content, op.OldString)
	switch {
	case n == 0:
		quote, cut := cutRunes(op.OldString, editMaxQuoteChars)
		if cut {
			quote += "…"
		}
		return "", 0, fmt.Sprintf("old_string not found in %s: %q (it must match exactly, including whitespace; read the file again to copy the current text)", path, quote)
	case n > 1 && !op.ReplaceAll:
		return "", 0, fmt.Sprintf("old_string occurs %d times in %s; add surrounding context to make it unique, or set replace_all to replace every occurrence", n, path)
	}
	if op.ReplaceAll {
		return strings.ReplaceAll(content, op.OldString, op.NewString), n, ""
	}
	return strings.Replace(content, op.OldString, op.NewString, 1), 1, ""
}
