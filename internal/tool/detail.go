package tool

// Detail is what a built-in did, in fields: at most one of its parts is
// set, by the tool it names.
type Detail struct {
	Shell *ShellDetail
	// File is set by write_file and edit.
	File *FileDetail
	Read *ReadDetail
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
