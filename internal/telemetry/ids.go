package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/arbor-run/arbor/internal/store"
)

// IDs: a run's trace id is its stored TraceParent's (the span it was
// started under) or derived from the run id, and the span ids of the run
// and its nodes are derived from the run id and node id, so every process
// that ever works on the run (the driver, the one that takes over from a
// dead driver, the workers that run its turns, arbor trace) names the
// same trace and parents from the run's row alone.

// RunTrace is run r's trace id: its stored TraceParent's when it was
// started under a span, else TraceID of its id.
func RunTrace(r store.Run) trace.TraceID {
	if p, ok := parseTraceParent(r.TraceParent); ok {
		return p.TraceID()
	}
	return TraceID(r.ID)
}

// parseTraceParent is the span context of a W3C traceparent.
func parseTraceParent(s string) (trace.SpanContext, bool) {
	if !store.ValidTraceParent(s) {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(s[3:35])
	sid, err2 := trace.SpanIDFromHex(s[36:52])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if s[53:] != "00" {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}

// TraceID is the trace id of a run started under no span: derived from
// its id.
func TraceID(run string) trace.TraceID {
	var id trace.TraceID
	sum := sha256.Sum256([]byte("arbor run\x00" + run))
	copy(id[:], sum[:])
	return id
}

// SpanID is the span id of node (0 for the run's root span) of run.
func SpanID(run string, node int64) trace.SpanID {
	var id trace.SpanID
	sum := sha256.Sum256([]byte("arbor span\x00" + run + "\x00" + strconv.FormatInt(node, 10)))
	copy(id[:], sum[:])
	if !id.IsValid() { // all zero: not a valid span id
		id[7] = 1
	}
	return id
}

// SpanContext is the remote span context of node (0: the run) of run in
// trace tid, for spans made elsewhere to be parented or linked to.
func SpanContext(tid trace.TraceID, run string, node int64) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: SpanID(run, node), TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

// Traceparent is the W3C traceparent header of node (0: the run) of
// stored run r: what a process continuing r's trace parents its spans to.
func Traceparent(r store.Run, node int64) string {
	sc := SpanContext(RunTrace(r), r.ID, node)
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

type fixedIDKey struct{}

// withFixedIDs makes the next span started with ctx take trace id tid
// (when it is a root) and span id sid.
func withFixedIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, fixedIDKey{}, [2][]byte{tid[:], sid[:]})
}

// idGenerator gives spans the ids withFixedIDs asked for, random ones
// otherwise.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var (
		tid trace.TraceID
		sid trace.SpanID
	)
	if ids, ok := ctx.Value(fixedIDKey{}).([2][]byte); ok {
		copy(tid[:], ids[0])
		copy(sid[:], ids[1])
		return tid, sid
	}
	for !tid.IsValid() {
		_, _ = rand.Read(tid[:])
	}
	return tid, randomSpanID()
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if ids, ok := ctx.Value(fixedIDKey{}).([2][]byte); ok {
		var sid trace.SpanID
		copy(sid[:], ids[1])
		return sid
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if binary.BigEndian.Uint64(b[:]) != 0 {
			return trace.SpanID(b)
		}
	}
}
