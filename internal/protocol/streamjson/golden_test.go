package streamjson_test

// Golden transcripts: testdata/<case>.jsonl records the exact exchange of
// one stream-json session, one JSON object per line, each with exactly one
// key:
//
//	{"in": <object>}      a line sent to arbor (compact JSON of the object)
//	{"in_raw": "<text>"}  a line sent verbatim (e.g. one that is not JSON)
//	{"out": <object>}     the next line arbor writes, after normalization
//	{"eof": true}         the input ends here; the "out" entries that follow
//	                      are what arbor still writes before Serve returns
//	                      (the end of the file ends the input too)
//	{"restart": true}     start the case's next server on the same home
//
// The replay sends each "in" line only after every "out" line before it
// has been received, compares received lines structurally (key order is
// ignored) and fails on any extra line. Values that legitimately vary are
// normalized before comparing: uuid → "<uuid>", session_id →
// "<session:N>", message and tool call ids (msg_, toolu_, call_,
// chatcmpl-) → "<msg:N>", "<toolu:N>", …, numbered in order of first
// appearance so equal ids stay equal; duration_ms, duration_api_ms and pid
// → placeholders; the test's home directory → "<home>". In "in" lines
// these placeholders are replaced by the values they stand for in this run.
// Usage is scripted, so token counts and cost are compared as they are.
//
// `go test -run Golden -update` rewrites the files from the current
// behaviour by running each case's steps; review the result by eye.

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/golden"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

var update = flag.Bool("update", false, "rewrite testdata/*.jsonl golden transcripts from the current behaviour")

// goldenCase is one transcript: the scripted model, the servers run in turn
// (all on one home) and the steps that drive them when recording.
type goldenCase struct {
	name    string
	turns   []llmtest.Turn
	servers []setupOpts // opts.Resume may hold a placeholder
	steps   []step
}

// step drives a recording: send a line, read output until a line matches,
// or end this server's input and start the next one.
type step struct {
	line    string
	raw     bool
	until   func(out) bool
	restart bool
}

func send(line string) step    { return step{line: line} }
func sendRaw(text string) step { return step{line: text, raw: true} }
func await(t, sub string) step { return step{until: typ(t, sub)} }
func restartServer() step      { return step{restart: true} }
func awaitDelta(text string) step {
	return step{until: func(o out) bool { return o.Type == "stream_event" && o.Event.Content == text }}
}

// entry is one line of a transcript file: kind is in, in_raw, out, eof or
// restart.
type entry = golden.Entry

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", c.name+".jsonl")
			if *update {
				golden.WriteTranscript(t, path, record(t, c))
			}
			replay(t, c, golden.ReadTranscript(t, path))
		})
	}
}

// run is one case in progress: the model, the normalizer and the current
// server.
type run struct {
	t      *testing.T
	c      goldenCase
	srv    *llmtest.Server
	n      *normalizer
	b      *bundle
	server int
	eof    bool
}

func newRun(t *testing.T, c goldenCase) *run {
	srv := llmtest.NewServer(c.turns...)
	t.Cleanup(srv.Close)
	r := &run{t: t, c: c, srv: srv, n: newNormalizer()}
	r.start()
	return r
}

func (r *run) start() {
	r.t.Helper()
	if r.server >= len(r.c.servers) {
		r.t.Fatalf("restart %d: the case has only %d servers", r.server, len(r.c.servers))
	}
	o := r.c.servers[r.server]
	o.home = r.n.Home
	o.opts.Resume = r.n.RestoreString(o.opts.Resume)
	r.b = setup(r.t, r.srv, o)
	r.n.Home = r.b.home
	r.eof = false
}

// recv returns the next output line, raw and normalized, or false when
// the output has ended.
func (r *run) recv() (out, any, bool) {
	r.t.Helper()
	o, ok := r.b.Recv()
	if !ok {
		return out{}, nil, false
	}
	v, err := golden.DecodeOrdered([]byte(o.raw))
	if err != nil {
		r.t.Fatalf("output line %q: %v", o.raw, err)
	}
	return o, r.n.normalize("", v), true
}

// sendIn sends an "in" value with its placeholders restored.
func (r *run) sendIn(v any) {
	r.t.Helper()
	b, err := golden.Marshal(r.n.Restore(v))
	if err != nil {
		r.t.Fatal(err)
	}
	r.b.Send(string(b))
}

func (r *run) closeInput() {
	if !r.eof {
		r.eof = true
		r.b.CloseInput()
	}
}

// finish ends the input, hands every remaining output line to rest and
// waits for Serve to return.
func (r *run) finish(rest func(any)) {
	r.t.Helper()
	r.closeInput()
	for _, v, ok := r.recv(); ok; _, v, ok = r.recv() {
		rest(v)
	}
	if err := r.b.Wait(); err != nil {
		r.t.Fatalf("Serve: %v", err)
	}
}

// record runs the case's steps and returns the exchange they produce.
func record(t *testing.T, c goldenCase) []entry {
	r := newRun(t, c)
	var es []entry
	outs := func(v any) { es = append(es, entry{Kind: "out", Value: v}) }
	end := func() {
		es = append(es, entry{Kind: "eof", Value: true})
		r.finish(outs)
	}
	for _, s := range c.steps {
		switch {
		case s.raw:
			es = append(es, entry{Kind: "in_raw", Value: s.line})
			r.b.Send(s.line)
		case s.line != "":
			v, err := golden.DecodeOrdered([]byte(s.line))
			if err != nil {
				t.Fatalf("step line %q: %v", s.line, err)
			}
			es = append(es, entry{Kind: "in", Value: v})
			r.sendIn(v)
		case s.until != nil:
			r.awaitRecording(s.until, outs)
		case s.restart:
			end()
			es = append(es, entry{Kind: "restart", Value: true})
			r.server++
			r.start()
		}
	}
	end()
	return es
}

func (r *run) awaitRecording(pred func(out) bool, outs func(any)) {
	r.t.Helper()
	for {
		o, v, ok := r.recv()
		if !ok {
			r.t.Fatalf("output ended before the awaited line; diagnostics:\n%s", r.b.Diag.String())
		}
		outs(v)
		if pred(o) {
			return
		}
	}
}

// replay drives a server from the transcript and checks its output.
func replay(t *testing.T, c goldenCase, es []entry) {
	r := newRun(t, c)
	extra := func(v any) {
		b, _ := golden.Marshal(v)
		t.Errorf("unexpected output line after the transcript's end of input: %s", b)
	}
	for i, e := range es {
		switch e.Kind {
		case "in":
			r.sendIn(e.Value)
		case "in_raw":
			s, ok := e.Value.(string)
			if !ok {
				t.Fatalf("entry %d: in_raw must be a string", i+1)
			}
			r.b.Send(s)
		case "eof":
			r.closeInput()
		case "restart":
			r.finish(extra)
			r.server++
			r.start()
		case "out":
			_, got, ok := r.recv()
			if !ok {
				want, _ := golden.Marshal(e.Value)
				t.Fatalf("entry %d: output ended, want %s; diagnostics:\n%s", i+1, want, r.b.Diag.String())
			}
			if d := golden.Diff("", golden.Plain(e.Value), golden.Plain(got)); len(d) > 0 {
				want, _ := golden.Marshal(e.Value)
				have, _ := golden.Marshal(got)
				t.Fatalf("entry %d differs:\n  %s\nwant %s\ngot  %s", i+1, strings.Join(d, "\n  "), want, have)
			}
		default:
			t.Fatalf("entry %d: unknown kind %q", i+1, e.Kind)
		}
	}
	r.finish(extra)
}

func userLine(text string) string {
	b, _ := json.Marshal(text)
	return `{"type":"user","message":{"role":"user","content":` + string(b) + `}}`
}

func controlLine(id, request string) string {
	return `{"type":"control_request","request_id":"` + id + `","request":` + request + `}`
}

// usage makes token counts, and so cost, the same in every run.
var usage = llmtest.Usage{Input: 20, Output: 8}

func writeCall(path, content string) []llmtest.ToolCall {
	return []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": path, "content": content}}}
}

func goldenCases() []goldenCase {
	partial := []setupOpts{{opts: streamjson.Options{PartialMessages: true}}}
	plain := []setupOpts{{}}
	return []goldenCase{{
		name: "handshake", servers: plain,
		steps: []step{send(initialize), await("system", "init")},
	}, {
		name: "plain_turn", servers: partial,
		turns: []llmtest.Turn{{Text: "Hello there friend", Thinking: "greet them", Usage: usage}},
		steps: []step{send(userLine("hi")), await("result", "")},
	}, {
		name: "approval_allow_updated", servers: plain,
		turns: []llmtest.Turn{{ToolCalls: writeCall("a.txt", "original"), Usage: usage}, {Text: "wrote a", Usage: usage}},
		steps: []step{send(userLine("write a")), await("control_request", "can_use_tool"),
			send(`{"type":"control_response","response":{"subtype":"success","request_id":"arbor-req_1","response":{"behavior":"allow","updatedInput":{"path":"a.txt","content":"edited by the client"}}}}`),
			await("result", "")},
	}, {
		name: "approval_deny", servers: plain,
		turns: []llmtest.Turn{{ToolCalls: writeCall("b.txt", "b"), Usage: usage}, {Text: "b refused", Expect: "not b", Usage: usage}},
		steps: []step{send(userLine("write b")), await("control_request", "can_use_tool"),
			send(`{"type":"control_response","response":{"subtype":"tool_approval","request_id":"arbor-req_1","response":{"behavior":"deny","message":"not b"}}}`),
			await("result", "")},
	}, {
		name: "ask_user", servers: plain,
		turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "ask_user", Input: map[string]any{"question": "Which color?", "options": []any{"red", "blue"}}}}, Usage: usage},
			{Text: "blue it is", Expect: "blue", Usage: usage},
		},
		steps: []step{send(userLine("pick a color")), await("control_request", "ask_user"),
			send(`{"type":"control_response","response":{"subtype":"success","request_id":"arbor-req_1","response":{"answer":"blue"}}}`),
			await("result", "")},
	}, {
		name: "interrupt", servers: partial,
		turns: []llmtest.Turn{
			{Text: "one two three four", Usage: usage, Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 4}},
			{Text: "after the interrupt", Usage: usage},
		},
		steps: []step{send(userLine("talk")), awaitDelta("one "),
			send(controlLine("int-1", `{"subtype":"interrupt"}`)), await("result", ""),
			send(userLine("again")), await("result", "")},
	}, {
		name: "switch_model", servers: plain,
		turns: []llmtest.Turn{{Text: "from gpt", Usage: usage}},
		steps: []step{
			send(controlLine("m-1", `{"subtype":"switch_model","model":"openai/gpt-test"}`)), await("system", "model_switched"),
			send(controlLine("m-2", `{"subtype":"switch_model","model":"nope/none"}`)), await("control_response", "error"),
			send(userLine("hi")), await("result", "")},
	}, {
		name: "config_override", servers: plain,
		turns: []llmtest.Turn{{ToolCalls: writeCall("t.txt", "trusted"), Usage: usage}, {Text: "done", Usage: usage}},
		steps: []step{
			send(controlLine("c-1", `{"subtype":"config_override","approval_mode":"reckless"}`)), await("control_response", ""),
			send(controlLine("c-2", `{"subtype":"config_override","approval_mode":"trust"}`)), await("control_response", ""),
			send(userLine("write t")), await("result", "")},
	}, {
		name: "auth_queued", servers: []setupOpts{{noKey: true}},
		turns: []llmtest.Turn{{Text: "first", Usage: usage}, {Text: "second", Usage: usage}},
		steps: []step{send(userLine("one")), await("control_request", "auth_required"),
			send(userLine("two")),
			send(`{"type":"control_response","response":{"subtype":"auth_response","request_id":"auth-init","response":{"provider_id":"anthropic","values":{"api_key":"sk-from-client-123"},"persist":true}}}`),
			await("result", ""), await("result", "")},
	}, {
		name: "resume", servers: []setupOpts{{}, {opts: streamjson.Options{Resume: "<session:1>"}}},
		turns: []llmtest.Turn{{Text: "remembered: blue", Usage: usage}, {Text: "you said blue", Expect: "what did I say", Usage: usage}},
		steps: []step{send(userLine("my color is blue")), await("result", ""), restartServer(),
			send(userLine("what did I say")), await("result", "")},
	}, {
		name: "invalid_json", servers: plain,
		turns: []llmtest.Turn{{Text: "still here", Usage: usage}},
		steps: []step{send(initialize), await("system", "init"),
			sendRaw("this is not json"), sendRaw(`{"type":"user","message":`), sendRaw(`[1,2,3]`),
			send(userLine("hi")), await("result", "")},
	}, {
		name: "unknown_control", servers: plain,
		steps: []step{
			send(controlLine("u-1", `{"subtype":"teleport"}`)),
			send(controlLine("u-2", `{"subtype":""}`)),
			send(controlLine("u-3", `{"subtype":"can_use_tool","tool_name":"shell"}`)),
			send(controlLine("u-4", `{"subtype":"INITIALIZE"}`)),
			await("control_response", ""), await("control_response", ""), await("control_response", ""), await("control_response", "")},
	}}
}
