// Package dialect recognises the client that launched arbor and reads its
// argv. A client starts arbor as it would start its own CLI: the Claude
// Agent SDK runs `claude --input-format stream-json --output-format
// stream-json …` with its own flags; arbor recognises that launch
// (Recognize), reads the flags the way that CLI does (ParseClaudeCode),
// and the front end then speaks that client's dialect of its protocol.
// A client that asks for arbor's own commands (`arbor headless
// --protocol …`) gets the spec's shapes.
//
// The Qwen Code SDK runs its CLI the same way with `--channel=SDK` added
// (and qwen's own flags: --approval-mode, --core-tools, …); that launch is
// Qwen, read by ParseQwen. See docs/qwen.md.
//
// This is the one place a dialect is chosen: a new client family adds its
// recognition and its flags here, and the front ends read the Dialect
// they are given.
//
// Invariants: an option of the client's CLI that arbor does not implement
// is refused with an error that wraps ErrUsage, never ignored; parsing
// reads at most the first input line (--await-initialize) and hands the
// input back whole.
package dialect

import (
	"errors"
	"io"
	"strings"
)

// Dialect is the shape of a protocol a client expects.
type Dialect string

const (
	// Spec is the protocol as its specification writes it (spec 000 for
	// the envelope protocol, 001/003 for stream-json): arbor's own argv.
	Spec Dialect = "spec"
	// ClaudeCode is stream-json as Claude Code 2.x speaks it, for the
	// Claude Agent SDK and other programs that launch the claude CLI.
	ClaudeCode Dialect = "claude-code"
	// Qwen is stream-json as the qwen CLI speaks it, for the Qwen Code SDK
	// (query() with pathToQwenExecutable).
	Qwen Dialect = "qwen"
)

// ErrUsage marks a launch arbor refuses: a flag it does not implement,
// a value it cannot take.
var ErrUsage = errors.New("usage")

// Parse reads args as client d's CLI reads them (ParseClaudeCode or
// ParseQwen) and returns the input to serve.
func Parse(d Dialect, args []string, in io.Reader) (Launch, io.Reader, error) {
	if d == Qwen {
		return ParseQwen(args, in)
	}
	return ParseClaudeCode(args, in)
}

// Recognize reports which client's CLI args are: for an invocation with
// no subcommand (or headless) and stream-json in and out, Qwen when it
// carries --channel (the Qwen Code SDK always passes --channel=SDK;
// Claude Code has no such flag), else ClaudeCode (the Claude Agent SDK);
// Spec for anything else. The clients pass flags first, so args that
// start with another word are arbor's own command line (arbor run with
// Claude Code's flags is refused by arbor run, not taken for a client).
func Recognize(args []string) Dialect {
	if ownCommand(args) {
		return Spec
	}
	in, out, channel := false, false, false
	for i, a := range args {
		next := ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case a == "--input-format" && next == "stream-json", a == "--input-format=stream-json":
			in = true
		case a == "--output-format" && next == "stream-json", a == "--output-format=stream-json":
			out = true
		case a == "--channel", strings.HasPrefix(a, "--channel="):
			channel = true
		}
	}
	switch {
	case in && out && channel:
		return Qwen
	case in && out:
		return ClaudeCode
	}
	return Spec
}

// ownCommand reports whether args start with a subcommand of arbor's other
// than headless.
func ownCommand(args []string) bool {
	return len(args) > 0 && args[0] != "headless" && !strings.HasPrefix(args[0], "-")
}
