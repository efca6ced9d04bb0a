package tool

import (
	"context"
	"time"
)

// detailKey marks a context whose caller reads Result.Detail.
type detailKey struct{}

// WithDetail is ctx for a call whose Result.Detail is read (a PostToolUse
// hook's tool_response). What a detail costs beyond the call's own work,
// a file's text before a write and the count of its lines after a read,
// is gathered only then: a call no hook reads does no more I/O than the
// model's answer needs.
func WithDetail(ctx context.Context) context.Context {
	return context.WithValue(ctx, detailKey{}, true)
}

// wantsDetail reports whether ctx is WithDetail's.
func wantsDetail(ctx context.Context) bool { return ctx.Value(detailKey{}) != nil }

// Detail is what a built-in did, in fields: at most one of its parts is
// set, by the tool it names.
type Detail struct {
	Shell *ShellDetail
	// File is set by write_file and edit.
	File  *FileDetail
	Read  *ReadDetail
	Glob  *GlobDetail
	Grep  *GrepDetail
	Todo  *TodoDetail
	Fetch *FetchDetail
}

// GlobDetail is what glob found: the files it shows, oldest first (as
// Claude Code's Glob lists them), each relative to the workspace root
// (absolute outside it); whether more matched than it shows, how many
// did, and how long the search took.
type GlobDetail struct {
	Files     []string
	Truncated bool
	Total     int
	Took      time.Duration
}

// GrepDetail is grep's matching lines as it shows them ("path:line:text",
// without a last newline or a note of a cap) and how many there are.
type GrepDetail struct {
	Content string
	Lines   int
}

// TodoDetail is todo_write's change: the list before (empty when every
// item of it was completed: Claude Code keeps no finished list) and the
// list it wrote.
type TodoDetail struct {
	Old, New []Todo
}

// FetchDetail is web_fetch's answer: the URL as given, the size of the
// body read, the status code of the last response and how long it took.
type FetchDetail struct {
	URL   string
	Bytes int
	Code  int
	Took  time.Duration
}

// ShellDetail is a foreground command's output (stdout and stderr
// merged, as the model reads it, trailing newlines cut), or the id of the
// background job a command started.
type ShellDetail struct {
	Output string
	// Interrupted: the command was killed at its timeout or cancelled.
	Interrupted  bool
	BackgroundID string
}

// FileDetail is a file's change by write_file or edit: its absolute path
// and its text before (when Existed) and after.
type FileDetail struct {
	Path          string
	Existed       bool
	Before, After string
}

// ReadDetail is what read_file returned, counted as Claude Code's Read
// counts (the text split at "\n": a file that ends with a newline has an
// empty last line): the lines' text without numbers, the first one's
// number, how many were returned and how many the file has (a lower
// bound for a file longer than read_file counts: readCountMaxBytes).
type ReadDetail struct {
	Path                string
	Text                string
	Start, Lines, Total int
}
