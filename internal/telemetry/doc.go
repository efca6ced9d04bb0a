// Package telemetry is the room of OpenTelemetry export (issue #32):
// spans and metrics for runs, nodes, model calls and tool calls, made by
// subscribing to the engine's typed events on the bus (as the
// OpenTelemetry contrib instrumentations do), never threaded through the
// call sites. docs/observability.md shows the span tree.
//
// Invariants:
//   - Off costs nothing: Settings.Enabled is false unless an OTLP
//     endpoint is named and OTEL_SDK_DISABLED is not true, and then app
//     neither starts the SDK nor subscribes anything.
//   - A run is one trace wherever its parts run: its trace id and the
//     span ids of the run and of every node are derived from the run id
//     and node id (IDs), so the driver that takes over a dead one, the
//     workers that run its turns and arbor trace long after all name the
//     same spans. The run and node spans are made from the stored rows
//     when the run ends (or by arbor trace), the model and tool spans live
//     from the events, under their node's span.
//   - Message content goes on spans only with capture_content; request
//     headers (API keys of backends) are never logged or exported.
//   - The Tracer's state is owned by the bus subscription's goroutine: no
//     lock guards it.
//
// It sits above tree (it reads agent and tree events) and below app,
// which subscribes it when the config turns it on.
package telemetry
