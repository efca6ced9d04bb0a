// Package acp serves the Agent Client Protocol (ACP, version 1) on stdio:
// `arbor acp` is an agent for editors (Zed, JetBrains IDEs, Neovim and
// Emacs plugins), beside the two headless protocols, on the same App,
// sessions, tree engine and interaction broker (docs/acp.md).
//
// Each ACP session is an arbor session that hosts a tree run of the same
// id: the agent's tree tools make child nodes, which the plan shows.
// Approvals become session/request_permission; edits go through the
// client's fs/* when it offers them.
//
// Invariants: stdout carries only JSON-RPC lines, each written whole by
// the outbox's goroutine; every request of the client gets exactly one
// answer, bad input included, and bad input never ends the connection;
// the reader never waits on a session (prompts run on the session's
// runner, the one owner of its agent); no lock is held while a line is
// queued or a request to the client waits. When the input ends, every
// prompt is cancelled, arbor's waiting requests are refused, the trees
// are released and Serve returns only when nothing it started runs.
//
// It is a front end: it may import app and everything below it, and the
// shared JSONL framing of package protocol; no other front end imports it.
package acp
