// Package mcpclient connects arbor to external MCP servers (stdio,
// streamable HTTP and SSE, through the official Go SDK, and the in-process
// servers of a Claude Agent SDK client over a transport its front end
// supplies) and offers their tools to every agent as a tool.Source, named
// mcp__<server>__<tool>.
//
// Invariants:
//   - a Manager starts each server once per process, all concurrently,
//     each within its start timeout; Ready waits until every server has
//     connected or failed;
//   - one goroutine owns each server's connection (server.run): it
//     connects, re-lists the tools on list_changed, notices a crash and
//     reconnects with backoff; calls read the current session under the
//     server's lock and fail cleanly (a tool error) while it is down;
//   - a stdio server runs in its own process group that dies with arbor
//     (tool.RunInGroup) and is killed whole on Stop; its stderr is copied
//     to a bounded log file with its secrets taken out (serverLog), never
//     to arbor's stdout or stderr; lines on its stdout that are no
//     JSON-RPC message are skipped (lineFilter);
//   - the tools offered keep their order and version between changes, so
//     provider prompt caches stay warm;
//   - Update (a config reload) stops only the servers whose entries were
//     removed or changed and starts only the changed and added ones; the
//     manager's mu guards the list of servers, never held across I/O.
package mcpclient
