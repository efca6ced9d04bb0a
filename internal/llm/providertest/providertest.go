// Package providertest is the one conformance suite every llm.Provider
// passes: it drives a provider through its official SDK against the
// scripted model server of llmtest (real HTTP + SSE) and checks streaming,
// assembly, request translation, usage, error classification, retries,
// stalls and cancellation.
//
// Invariants checked for every call: a stream ends with exactly one
// llm.Done as its last item, or one error and nothing after it.
package providertest

import (
	"bytes"
	"encoding/json"
	"iter"
	"reflect"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// Model is the model name the suite requests.
const Model = "suite-model"

// NewProvider builds the provider under test for a server; baseURL is the
// server's root URL ("http://127.0.0.1:PORT", no path).
type NewProvider func(t *testing.T, baseURL string) llm.Provider

// Run runs the suite against providers built by newProvider.
func Run(t *testing.T, newProvider NewProvider) {
	t.Helper()
	s := &suite{newProvider: newProvider}
	t.Run("Stream", s.testStream)
	t.Run("Tools", s.testTools)
	t.Run("Faults", s.testFaults)
	t.Run("Retry", s.testRetry)
	t.Run("NoRetry", s.testNoRetry)
	t.Run("Cancel", s.testCancel)
}

type suite struct {
	newProvider NewProvider
}

// bundle is one test's server and provider.
type bundle struct {
	srv *llmtest.Server
	p   llm.Provider
}

// setup starts a server answering with turns and builds a provider for it;
// both are closed when the test ends.
func (s *suite) setup(t *testing.T, turns ...llmtest.Turn) *bundle {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	return &bundle{srv: srv, p: s.newProvider(t, srv.URL)}
}

// request returns the suite's basic one-message request.
func request(text string) *llm.Request {
	return &llm.Request{Model: Model, Messages: []llm.Message{llm.UserText(text)}}
}

// result is a drained stream.
type result struct {
	events []llm.Event
	resp   *llm.Response
	err    error
}

// drain consumes seq, checking the stream's shape: only deltas before one
// final Done, or an error with nothing after it.
func drain(t *testing.T, seq iter.Seq2[llm.Event, error]) result {
	t.Helper()
	var r result
	for ev, err := range seq {
		switch {
		case r.err != nil || r.resp != nil:
			t.Fatalf("stream went on after its end: %#v, %v", ev, err)
		case err != nil:
			if ev != nil {
				t.Fatalf("error %v came with an event %#v", err, ev)
			}
			r.err = err
		case ev == nil:
			t.Fatal("stream yielded a nil event without an error")
		default:
			r.events = append(r.events, ev)
			if d, ok := ev.(llm.Done); ok {
				if d.Response == nil {
					t.Fatal("Done without a Response")
				}
				r.resp = d.Response
			}
		}
	}
	if r.err == nil && r.resp == nil {
		t.Fatal("stream ended with neither Done nor an error")
	}
	return r
}

// mustSucceed drains seq and requires success.
func mustSucceed(t *testing.T, seq iter.Seq2[llm.Event, error]) result {
	t.Helper()
	r := drain(t, seq)
	if r.err != nil {
		t.Fatalf("stream failed: %v", r.err)
	}
	return r
}

// mustFail drains seq and requires an error.
func mustFail(t *testing.T, seq iter.Seq2[llm.Event, error]) result {
	t.Helper()
	r := drain(t, seq)
	if r.err == nil {
		t.Fatalf("stream succeeded with %+v, want an error", r.resp)
	}
	return r
}

// deltas returns the concatenated text and thinking deltas and how many
// of each there were.
func deltas(events []llm.Event) (text, thinking string, nText, nThinking int) {
	var tb, hb strings.Builder
	for _, ev := range events {
		switch d := ev.(type) {
		case llm.TextDelta:
			tb.WriteString(d.Text)
			nText++
		case llm.ThinkingDelta:
			hb.WriteString(d.Text)
			nThinking++
		}
	}
	return tb.String(), hb.String(), nText, nThinking
}

// streamedCall is a tool call as reconstructed from stream events.
type streamedCall struct {
	id, name  string
	json      strings.Builder
	fragments int
	ended     bool
}

// streamedCalls reconstructs tool calls from events, checking that every
// delta and end refers to a begun call.
func streamedCalls(t *testing.T, events []llm.Event) []*streamedCall {
	t.Helper()
	var calls []*streamedCall
	get := func(i int) *streamedCall {
		t.Helper()
		if i < 0 || i >= len(calls) {
			t.Fatalf("tool call event for index %d, but %d calls begun", i, len(calls))
		}
		return calls[i]
	}
	for _, ev := range events {
		switch e := ev.(type) {
		case llm.ToolCallBegin:
			if e.Index != len(calls) {
				t.Fatalf("ToolCallBegin index %d, want %d", e.Index, len(calls))
			}
			calls = append(calls, &streamedCall{id: e.ID, name: e.Name})
		case llm.ToolCallDelta:
			c := get(e.Index)
			if c.ended {
				t.Fatalf("ToolCallDelta for ended call %d", e.Index)
			}
			c.json.WriteString(e.JSON)
			c.fragments++
		case llm.ToolCallEnd:
			c := get(e.Index)
			if c.ended {
				t.Fatalf("ToolCallEnd twice for call %d", e.Index)
			}
			c.ended = true
		}
	}
	return calls
}

// requireJSONEqual compares two JSON documents by value.
func requireJSONEqual(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got invalid JSON %q: %v", what, got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want invalid JSON %q: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s = %s, want %s", what, compact(got), compact(want))
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// onlyRequest returns the server's single recorded request.
func (b *bundle) onlyRequest(t *testing.T) llmtest.Request {
	t.Helper()
	reqs := b.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	if reqs[0].DecodeErr != nil {
		t.Fatalf("server could not decode the request: %v", reqs[0].DecodeErr)
	}
	return reqs[0]
}
