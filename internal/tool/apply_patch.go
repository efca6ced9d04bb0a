package tool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

type applyPatchArgs struct {
	Patch string `json:"patch,omitempty" jsonschema_description:"The patch: *** Begin Patch, then for each file *** Add File: PATH (every line +), *** Delete File: PATH, or *** Update File: PATH (optionally *** Move to: NEWPATH) with hunks starting @@ whose lines are context (space), removed (-) or added (+), then *** End Patch."`
	Input string `json:"input,omitempty" jsonschema_description:"The patch, under Codex's name for it; give patch or input."`
}

func (a applyPatchArgs) text() string {
	if a.Patch != "" {
		return a.Patch
	}
	return a.Input
}

// Target names every file the patch touches, so that each is decided like
// a write; a patch that does not parse names none and fails when run.
func (a applyPatchArgs) Target() Target {
	ops, err := parsePatch(a.text())
	if err != nil {
		return Target{}
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.path)
		if op.moveTo != "" {
			paths = append(paths, op.moveTo)
		}
	}
	return Target{Paths: paths}
}

const applyPatchDescription = `Apply a patch that adds, updates, moves or deletes one or more files, all or nothing: ` +
	`if any hunk does not apply, no file changes and the error quotes that hunk. Format:
*** Begin Patch
*** Add File: path/new.txt
+first line
*** Update File: path/old.py
@@ def f():
-    return 1
+    return 2
*** Delete File: path/gone.txt
*** End Patch
Context lines start with a space; give about three around each change, and an @@ line naming the class or function when the context alone is not unique.`

func newApplyPatch(root workRoot) Tool {
	return New("apply_patch", applyPatchDescription, KindWrite, func(_ context.Context, _ Call, a applyPatchArgs) Result {
		return root.applyPatch(a)
	})
}

// fileState is a file as the patch leaves it: its content, or gone.
type fileState struct {
	content string
	gone    bool
	mode    fs.FileMode
}

func (w workRoot) applyPatch(a applyPatchArgs) Result {
	if a.Patch != "" && a.Input != "" {
		return Errorf("give the patch once: patch or input, not both")
	}
	ops, err := parsePatch(a.text())
	if err != nil {
		return Errorf("apply_patch: %v", err)
	}
	// Work out every file's new content before writing any.
	next := map[string]*fileState{}
	var order, summary []string
	current := func(p, given string) (*fileState, error) {
		if st, ok := next[p]; ok {
			if st.gone {
				return nil, fmt.Errorf("%s: %w", given, fs.ErrNotExist)
			}
			return st, nil
		}
		data, info, err := w.readAt(p, editMaxFileBytes, func(size int64) error {
			return fmt.Errorf("%s is too large to patch (%d bytes; the limit is %d)", given, size, editMaxFileBytes)
		})
		switch {
		case err != nil:
			return nil, err
		case info.IsDir():
			return nil, fmt.Errorf("%s is a directory", given)
		}
		if looksBinary(data[:min(len(data), binarySniffBytes)]) {
			return nil, fmt.Errorf("%s is a binary file; apply_patch only changes text", given)
		}
		return &fileState{content: string(data), mode: info.Mode().Perm()}, nil
	}
	set := func(p string, st *fileState) {
		if _, ok := next[p]; !ok {
			order = append(order, p)
		}
		next[p] = st
	}
	for _, op := range ops {
		p := w.abs(op.path)
		switch op.kind {
		case "add":
			mode := fs.FileMode(0o644)
			if info, err := w.statAt(p); err == nil && info.IsDir() {
				return Errorf("apply_patch: %s is a directory", op.path)
			} else if err == nil {
				mode = info.Mode().Perm()
			}
			set(p, &fileState{content: joinLines(op.lines, true), mode: mode})
			summary = append(summary, "A "+op.path)
		case "delete":
			st, err := current(p, op.path)
			if err != nil {
				return patchFileError("delete", op.path, err)
			}
			set(p, &fileState{gone: true, mode: st.mode})
			summary = append(summary, "D "+op.path)
		case "update":
			st, err := current(p, op.path)
			if err != nil {
				return patchFileError("update", op.path, err)
			}
			lines, trailing := splitLines(st.content)
			if lines, err = applyHunks(op.path, lines, op.hunks); err != nil {
				return Errorf("apply_patch: %v\nNo file was changed.", err)
			}
			updated := &fileState{content: joinLines(lines, trailing), mode: st.mode}
			if op.moveTo == "" {
				set(p, updated)
				summary = append(summary, "M "+op.path)
				break
			}
			set(w.abs(op.moveTo), updated)
			set(p, &fileState{gone: true, mode: st.mode})
			summary = append(summary, "M "+op.path+" → "+op.moveTo)
		}
	}
	if err := w.commitFiles(order, next); err != nil {
		return Errorf("apply_patch: %v\nNo file was changed.", err)
	}
	return Result{Content: "applied the patch:\n" + strings.Join(summary, "\n")}
}

func patchFileError(verb, path string, err error) Result {
	if errors.Is(err, fs.ErrNotExist) {
		return Errorf("apply_patch: cannot %s %s: it does not exist\nNo file was changed.", verb, path)
	}
	return Errorf("apply_patch: cannot %s %s: %v\nNo file was changed.", verb, path, err)
}

// commitFiles writes every file's new state, in order; when one fails it
// puts back the ones already written and says which failed.
func (w workRoot) commitFiles(order []string, next map[string]*fileState) error {
	type saved struct {
		path    string
		data    []byte
		existed bool
		mode    fs.FileMode
	}
	var done []saved
	undo := func() {
		for i := len(done) - 1; i >= 0; i-- {
			s := done[i]
			if s.existed {
				_ = w.writeAt(s.path, s.data, s.mode)
			} else {
				_ = w.removeAt(s.path)
			}
		}
	}
	for _, p := range order {
		st := next[p]
		s := saved{path: p, mode: st.mode}
		if data, _, err := w.readAt(p, 1<<40, func(int64) error { return errTooLarge }); err == nil { // the whole file, to put back
			s.data, s.existed = data, true
		}
		var err error
		if st.gone {
			err = w.removeAt(p)
		} else {
			err = w.writeAt(p, []byte(st.content), st.mode)
		}
		if err != nil {
			undo()
			return fmt.Errorf("writing %s: %w", p, err)
		}
		done = append(done, s)
	}
	return nil
}

// splitLines splits a file into lines, saying whether it ended with a
// newline.
func splitLines(s string) ([]string, bool) {
	if s == "" {
		return nil, true
	}
	trailing := strings.HasSuffix(s, "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n"), trailing
}

func joinLines(lines []string, trailing bool) string {
	if len(lines) == 0 {
		return ""
	}
	s := strings.Join(lines, "\n")
	if trailing {
		s += "\n"
	}
	return s
}
