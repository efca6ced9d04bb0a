// Package web is arbor's browser front end and JSON API (`arbor serve`):
// a runs list, a run page drawing the tree live, a node page with the
// node's transcript, and steering (answers, approvals, stop / pause /
// resume, resuming and starting runs). See docs/web.md.
//
// Invariants:
//   - every action goes through the same engine calls and the same run
//     lease as the terminal and `arbor answer` (a Steerer the CLI
//     implements), so front ends never conflict;
//   - live updates come from the event bus through one subscription; each
//     SSE client has a bounded queue of its own, and a client that falls
//     behind is sent a resync frame instead of its backlog: no client can
//     block the bus, the run or another client;
//   - everything a model wrote is HTML-escaped (html/template; the script
//     only sets textContent);
//   - with a token every request must carry it, and a server on a
//     non-loopback address refuses to start without one (CheckAddr).
package web
