// Package acp is the room of the Agent Client Protocol front end (issue
// #33, not built yet): `arbor acp` serves an editor over JSON-RPC on
// stdio, beside the two headless protocols (envelope, streamjson), on the
// same App, sessions and interaction broker.
//
// It is a front end: it may import app and everything below it, and the
// shared JSONL framing of package protocol; no other front end imports it.
package acp
