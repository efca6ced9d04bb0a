package tool

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// BuiltinOptions configures the built-in tools.
type BuiltinOptions struct {
	// Workspace is the directory relative paths are resolved against and
	// shell commands run in. Empty means the current directory.
	Workspace string
	// Asker answers ask_user; nil makes ask_user report that no one is
	// available.
	Asker Asker
	// Todos receives todo_write's lists; nil gives todo_write a private list.
	Todos *TodoList
	// ShellTimeout is shell's default timeout (DefaultShellTimeout when
	// zero); ShellMaxTimeout the largest a call may ask for
	// (DefaultShellMaxTimeout when zero).
	ShellTimeout, ShellMaxTimeout time.Duration
	// Sandbox confines shell commands (and background jobs); nil runs them
	// with the user's rights.
	Sandbox *sandbox.Sandbox
	// SandboxAsks makes a confined command ask as an unconfined one would
	// (the mode decides); SandboxOnly refuses dangerously_disable_sandbox.
	SandboxAsks, SandboxOnly bool
	// NoImages leaves out view_image: the model takes no image input.
	NoImages bool
	// Policy decides what web_fetch meets on its way (a redirect to
	// another host, a private address); nil refuses both.
	Policy Policy
	// Files, when set, is where read_file, write_file and edit read and
	// write text files: a client that owns them (an editor's buffers, over
	// ACP).
	Files Files
	// Roots are directories besides the workspace the file tools may
	// work in (--add-dir; the permission policy must count them inside):
	// a path in one is confined to it as one in the workspace is.
	Roots []string
	// WithheldEnv names variables shell commands do without, besides
	// arbor's own credentials (agentEnv): the key variables of configured
	// providers.
	WithheldEnv []string
	// Env are NAME=value entries shell commands and background jobs get
	// on top of that environment: what the project's settings set
	// (their "env"; project.Knowledge.EnvList).
	Env []string
}

// Builtins returns the built-in tools: read_file, view_image (unless
// o.NoImages), write_file, edit, apply_patch, delete, list_directory, glob,
// grep, shell, web_fetch, todo_write and ask_user, in that order.
// They are not guarded: wrap them with the permission decorator.
func Builtins(o BuiltinOptions) []Tool {
	ws, err := filepath.Abs(o.Workspace)
	if err != nil {
		// Only a missing working directory makes Abs fail; fall back to the
		// path as given rather than refusing to build the tools.
		ws = filepath.Clean(o.Workspace)
	}
	root := newWorkRoot(ws, o.Roots)
	if h, ok := o.Policy.(Hider); ok {
		root.hides = h.Hides
	}
	todos := o.Todos
	if todos == nil {
		todos = NewTodoList(nil)
	}
	tools := []Tool{
		newReadFile(root, o.Files),
		newWriteFile(root, o.Files),
		newEdit(root, o.Files),
		newApplyPatch(root),
		newDelete(root),
		newListDirectory(root),
		newGlob(root),
		newGrep(root),
		newShell(root, o),
		newWebFetch(o),
		newTodoWrite(todos),
		newAskUser(o.Asker),
	}
	if !o.NoImages {
		tools = slices.Insert(tools, 1, newViewImage(root))
	}
	return tools
}

// BuiltinNames are the names of the tools this package makes: the
// built-ins (view_image included) and the job tools (Jobs.Tools).
func BuiltinNames() []string {
	var names []string
	for _, t := range append(Builtins(BuiltinOptions{}), NewJobs(nil).Tools(BuiltinOptions{})...) {
		if n := Name(t); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}
