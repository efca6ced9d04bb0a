// Package tool defines what a tool is to arbor, derives each tool's JSON
// schema from its Go argument struct, holds the registry that resolves the
// model's tool names tolerantly, applies the permission decorator, and
// implements the built-in tools (one file each).
//
// Invariants: a tool failure the model should see is a Result with IsError
// set, never a Go error; every built-in caps its output; the permission
// decorator wraps every tool exactly once (see Guard); every process a tool
// starts runs in its own process group and dies with arbor (procgroup.go).
package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/arbor-run/arbor/internal/llm"
)

// Kind says what a tool can do to the world; permission modes decide by it.
type Kind int

const (
	// KindRead only reads (read_file, glob, grep, list_directory).
	KindRead Kind = iota
	// KindWrite changes files (write_file, edit).
	KindWrite
	// KindExecute runs commands (shell).
	KindExecute
	// KindInteract talks to the user or updates session state (ask_user,
	// todo_write); it never needs approval.
	KindInteract
	// KindNetwork reaches a host (web_fetch).
	KindNetwork
)

func (k Kind) String() string {
	switch k {
	case KindRead:
		return "read"
	case KindWrite:
		return "write"
	case KindExecute:
		return "execute"
	case KindInteract:
		return "interact"
	case KindNetwork:
		return "network"
	}
	return "unknown"
}

// Info describes a tool.
type Info struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the arguments object.
	Schema json.RawMessage
	Kind   Kind
	// Idempotent tools have the same effect run twice as once (reads, or
	// writes keyed by the call id). The agent runs such a tool again when a
	// crash interrupted it, instead of reporting it interrupted.
	Idempotent bool
}

// Idempotent marks t as safe to run again after an interruption.
func Idempotent(t Tool) Tool { return idempotent{t} }

type idempotent struct{ Tool }

func (i idempotent) Info() Info {
	info := i.Tool.Info()
	info.Idempotent = true
	return info
}

func (i idempotent) Name() string { return Name(i.Tool) }

// Namer is a Tool that gives its name without Info, which derives a
// typed tool's schema. A tool New made, and the wrappers Idempotent and
// Guard make, are Namers; a wrapper elsewhere is one by asking Name of
// what it wraps. It must say what its Info's Name says.
type Namer interface {
	Name() string
}

// Name is t's name, as Info gives it, without deriving a schema when t is
// a Namer: what only needs names (a registry, a session hiding some
// tools, a hook) should ask here.
func Name(t Tool) string {
	if n, ok := t.(Namer); ok {
		return n.Name()
	}
	return t.Info().Name
}

// Spec returns the description the model sees.
func (i Info) Spec() llm.ToolSpec {
	return llm.ToolSpec{Name: i.Name, Description: i.Description, InputSchema: i.Schema}
}

// Call is one invocation of a tool.
type Call struct {
	// ID is the model's tool call id.
	ID    string
	Input json.RawMessage
}

// Result is what the model sees back.
type Result struct {
	Content string
	IsError bool
	// EndTurn asks the agent loop to end its turn after this step instead
	// of calling the model again (the tree's complete tool sets it).
	EndTurn bool
	// Stop ends the turn, failed with this error, once this call's step
	// is stored; the step's later calls are not run (a hook that answered
	// continue: false, as in Claude Code).
	Stop error
	// Blocked says what the OS sandbox refused during the call (a path, a
	// host), one line each, for the events people see; Content tells the
	// model too.
	Blocked []string
	// Images go to the model with Content (an MCP tool's image blocks).
	Images []llm.Image
	// Detail is what a built-in did, in fields, for readers that want
	// more than the model's text (hooks: ToClaudeCodeResponse); nil for
	// other tools and for failures.
	Detail *Detail
	// Notices are words for the person, never the model, that came with
	// the call (its hooks' systemMessage); nil for most calls.
	Notices []Notice
	// Refused: the call did not run, because the permission check or
	// the person asked refused it (an error result). Hooks tell a
	// refusal from a failure by it: only a failure runs
	// PostToolUseFailure, as in Claude Code.
	Refused bool
}

// Notice is a message for the person about a call ("PreToolUse:Bash
// says: …"). After: it was said after the call ran (PostToolUse), to
// show after its result.
type Notice struct {
	Text  string
	After bool
}

// Errorf returns an error result.
func Errorf(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...), IsError: true}
}

// Tool is one capability offered to the model.
type Tool interface {
	Info() Info
	// Target names what the call acts on, for permission rules: the path of
	// a file tool, the command of shell, "" when nothing applies. It fails
	// when the input does not decode.
	Target(input json.RawMessage) (Target, error)
	Run(ctx context.Context, call Call) Result
}

// Target is what a call acts on.
type Target struct {
	// Paths are the file system paths the call touches, as given.
	Paths []string
	// Command is the shell command, for KindExecute tools.
	Command string
	// Sandboxed says the command will run confined by the OS sandbox, or
	// the host is on the sandbox's network allow-list.
	Sandboxed bool
	// Host is the host a network tool reaches; Private says it is a
	// loopback, private or link-local address (see permission.Request).
	Host    string
	Private bool
}

// Main returns the main argument a rule pattern is matched against.
func (t Target) Main() string {
	if t.Host != "" {
		return t.Host
	}
	if t.Command != "" {
		return t.Command
	}
	if len(t.Paths) > 0 {
		return t.Paths[0]
	}
	return ""
}
