package telemetry

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/otel/trace"
)

// IDs: a run's trace id and the span ids of the run and its nodes are
// derived from the run id, so every process that ever works on the run
// (the driver, the one that takes over from a dead driver, the workers
// that run its turns, arbor trace) names the same trace and parents. The
// run id is random and stored with the run, so this is the run's stored
// trace context, written once.

// TraceID is run's trace id.
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

// SpanContext is the remote span context of node (0: the run) of run,
// for spans made elsewhere to be parented or linked to.
func SpanContext(run string, node int64) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: TraceID(run), SpanID: SpanID(run, node), TraceFlags: trace.FlagsSampled, Remote: true,
	})
}

// Traceparent is the W3C traceparent header of node (0: the run) of run.
func Traceparent(run string, node int64) string {
	sc := SpanContext(run, node)
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
