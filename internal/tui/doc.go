// Package tui shows a running coordination tree to a person: Live is the
// interactive tree view of `arbor run` on a terminal (bubbletea + lipgloss),
// Plain prints one line per transition when stdout is not a terminal.
//
// Both are bus subscribers (Handle) and follow one run: the run id they
// were given, or, when that is "", the run of the first tree event they see.
// Tool calls and usage are attributed to nodes through the session id each
// node's NodeChanged carries.
//
// # Plain line format
//
// Every line starts with "#<node id> " or "run "; fields are separated by
// single spaces except where two are shown. Texts (goal, result, error,
// reason, tool argument) are their first line, cut at 100 characters with
// "…".
//
//	#<id> + <state> <tag> <goal>[ blocked_by=#<a>,#<b>][ model=<provider/name>]
//	#<id> <from> → <to>  <tag> <goal>[ blocked_by=#<a>,#<b>][  result: <text>][  error: <text>][  reason: <text>]
//	#<id> → <tool> <argument>
//	#<id> ✉ #<parent>: <first line of a notify message>
//	#<id> ℹ <what a hook of the node said, "Stop says: …">
//	run <run id> <outcome>[: <error>]
//
// The first is a node's creation, the second any later transition (result
// on completion, error when the node has one, reason when the engine gave
// one), the third a tool call of the node's agent, the ℹ line what a hook
// of the node said for the person (its systemMessage), the last the end of the
// run (outcome is a store.Run* status: complete, failed, cancelled,
// budget_exhausted, interrupted). <tag> is the node kind, with the spawn
// mode for tasks: goal, task(spawn), task(fork), ask. For example:
//
//	#3 + pending task(fork) Comparative analysis blocked_by=#2,#4
//	#3 pending → active  task(fork) Comparative analysis
//	#3 → shell go test ./...
//	#3 active → complete  task(fork) Comparative analysis  result: GraphQL wins on flexibility
//	run 01J9Z4 complete
//
// # Live view
//
// One line per node, indented by depth: a state glyph (● active or
// synthesizing, ○ pending, ◐ waiting, ⏸ paused, ✓ complete, ✗ failed,
// ⊘ cancelled, ? an ask node awaiting its answer), the id, the tag, the
// goal cut to the width, then blocked-by for pending nodes, a spinner and
// the elapsed time for running nodes, tokens and cost. A completed node's
// result (a failed node's error) follows dimmed on its own line. A totals
// line, a line per failed MCP server (SetMCPFailures) and the oldest
// pending interaction close the view: approvals take
// y / n / a (always, remembered for the session); questions take a number
// (an option), text, or Enter on an empty input (the question's default,
// or a decline when it has none); Esc declines a question. Ctrl-C calls
// LiveOptions.OnInterrupt and the view goes on until Quit.
//
// Invariants: Handle never blocks (events are queued, in order, for the
// program); the model is plain state updated only by Update, and render is
// a pure function of it, so both are tested without a terminal.
package tui
