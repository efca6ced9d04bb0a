// Package telemetry is the room of OpenTelemetry export (issue #32, not
// built yet): spans and metrics for runs, nodes, model calls and tool
// calls, made by subscribing to the engine's typed events on the bus (as
// the OpenTelemetry contrib instrumentations do), never threaded through
// the call sites.
//
// It sits above tree (it reads agent and tree events) and below app,
// which subscribes it when the config turns it on.
package telemetry
