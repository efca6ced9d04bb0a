package envelope_test

// Golden transcripts: testdata/<case>.jsonl records the exact exchange of
// one envelope session, one JSON object per line, each with exactly one
// key:
//
//	{"in": <object>}      a line sent to arbor (compact JSON of the object)
//	{"in_raw": "<text>"}  a line sent verbatim (e.g. one that is not JSON);
//	                      {"in_raw": {"prefix": …, "repeat": …, "count": N,
//	                      "suffix": …}} stands for a long line
//	{"out": <object>}     the next line arbor writes, after normalization
//	{"eof": true}         the input ends here; the "out" entries that follow
//	                      are what arbor still writes before Serve returns
//	                      (the end of the file ends the input too)
//
// The replay sends each "in" line only after every "out" line before it
// has been received, compares received lines structurally (key order is
// ignored) and fails on any extra line. Values that legitimately vary are
// normalized before comparing: session ids → "<session:N>" (also inside
// other strings, such as the /stats text), tool call ids (toolu_, call_)
// → "<toolu:N>", "<call:N>", numbered in order of first appearance so equal
// ids stay equal; updated_at and deadline → "<time>"; the test's home
// directory → "<home>". In "in" lines these placeholders are replaced by
// the values they stand for in this run. Everything else is compared as it
// is: seq numbers, the broker's request ids (req_N), error codes and
// messages, token counts.
//
// `go test -run Golden -update` rewrites the files from the current
// behaviour by running each case's steps; review the result by eye.

import (
	"encoding/json"
	"flag"
	"github.com/arbor-run/arbor/internal/protocol/golden"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.jsonl golden transcripts from the current behaviour")

// goldenCase is one transcript: the scripted model, the workspace files
// and the steps that drive the server when recording.
type goldenCase struct {
	name  string
	turns []llmtest.Turn
	files map[string]string
	steps []step
}

// step drives a recording: send a line (raw: verbatim), or read output
// until a line matches.
type step struct {
	in    any // an object for "in", a string or repeat object for "in_raw"
	raw   bool
	until func(line) bool
}

// line is the part of an output envelope the steps match on.
type line struct {
	Type    string `json:"type"`
	Payload struct {
		Type string `json:"type"`
	} `json:"payload"`
}

func send(l string) step       { return step{in: l} }
func sendRaw(text string) step { return step{in: text, raw: true} }

// sendLong sends prefix, repeat count times, then suffix, as one line.
func sendLong(prefix, repeat string, count int, suffix string) step {
	o := golden.Object{{Key: "prefix", Value: prefix}, {Key: "repeat", Value: repeat}, {Key: "count", Value: json.Number(strconv.Itoa(count))}, {Key: "suffix", Value: suffix}}
	return step{in: o, raw: true}
}

func await(typ string) step { return step{until: func(l line) bool { return l.Type == typ }} }
func awaitActivity(kind string) step {
	return step{until: func(l line) bool { return l.Type == "activity" && l.Payload.Type == kind }}
}

// entry is one line of a transcript file: kind is in, in_raw, out or eof.
type entry struct {
	kind  string
	value any
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", c.name+".jsonl")
			if *update {
				writeTranscript(t, path, record(t, c))
			}
			replay(t, c, readTranscript(t, path))
		})
	}
}

// run is one case in progress: the model, the server and the normalizer.
type run struct {
	t   *testing.T
	g   *goldenServer
	n   *normalizer
	eof bool
}

func newRun(t *testing.T, c goldenCase) *run {
	srv := llmtest.NewServer(c.turns...)
	t.Cleanup(srv.Close)
	g := startGolden(t, srv, c.files)
	return &run{t: t, g: g, n: newNormalizer(g.home)}
}

// recv returns the next output line, decoded for matching and normalized,
// or false when the output has ended.
func (r *run) recv() (line, any, bool) {
	r.t.Helper()
	select {
	case raw, ok := <-r.g.outs:
		if !ok {
			return line{}, nil, false
		}
		var l line
		v, err := golden.DecodeOrdered([]byte(raw))
		if err == nil {
			err = json.Unmarshal([]byte(raw), &l)
		}
		if err != nil {
			r.t.Fatalf("output line %q: %v", raw, err)
		}
		return l, r.n.normalize("", v), true
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no output for 30s (a hang); diagnostics:\n%s", r.g.diag.String())
		return line{}, nil, false
	}
}

// sendIn sends an "in" value with its placeholders restored.
func (r *run) sendIn(v any) {
	r.t.Helper()
	b, err := golden.Marshal(r.n.restore(v))
	if err != nil {
		r.t.Fatal(err)
	}
	r.g.send(string(b))
}

func (r *run) sendRaw(v any) {
	r.t.Helper()
	s, err := rawLine(v)
	if err != nil {
		r.t.Fatal(err)
	}
	r.g.send(s)
}

func (r *run) closeInput() {
	if !r.eof {
		r.eof = true
		r.g.in.Close()
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
	if err := <-r.g.done; err != nil {
		r.t.Fatalf("Serve: %v", err)
	}
}

// record runs the case's steps, after the ready line, and returns the
// exchange they produce.
func record(t *testing.T, c goldenCase) []entry {
	r := newRun(t, c)
	var es []entry
	outs := func(v any) { es = append(es, entry{"out", v}) }
	r.awaitRecording(func(line) bool { return true }, outs)
	for _, s := range c.steps {
		switch {
		case s.raw:
			es = append(es, entry{"in_raw", s.in})
			r.sendRaw(s.in)
		case s.in != nil:
			v, err := golden.DecodeOrdered([]byte(s.in.(string)))
			if err != nil {
				t.Fatalf("step line %q: %v", s.in, err)
			}
			es = append(es, entry{"in", v})
			r.sendIn(v)
		case s.until != nil:
			r.awaitRecording(s.until, outs)
		}
	}
	es = append(es, entry{"eof", true})
	r.finish(outs)
	return es
}

func (r *run) awaitRecording(pred func(line) bool, outs func(any)) {
	r.t.Helper()
	for {
		l, v, ok := r.recv()
		if !ok {
			r.t.Fatalf("output ended before the awaited line; diagnostics:\n%s", r.g.diag.String())
		}
		outs(v)
		if pred(l) {
			return
		}
	}
}

// replay drives a server from the transcript and checks its output.
func replay(t *testing.T, c goldenCase, es []entry) {
	r := newRun(t, c)
	extra := func(v any) {
		t.Errorf("unexpected output line after the transcript's end of input: %s", golden.Show(v))
	}
	for i, e := range es {
		switch e.kind {
		case "in":
			r.sendIn(e.value)
		case "in_raw":
			r.sendRaw(e.value)
		case "eof":
			r.closeInput()
		case "out":
			_, got, ok := r.recv()
			if !ok {
				t.Fatalf("entry %d: output ended, want %s; diagnostics:\n%s", i+1, golden.Show(e.value), r.g.diag.String())
			}
			if d := golden.Diff("", golden.Plain(e.value), golden.Plain(got)); len(d) > 0 {
				t.Fatalf("entry %d differs:\n  %s\nwant %s\ngot  %s", i+1, strings.Join(d, "\n  "), golden.Show(e.value), golden.Show(got))
			}
		default:
			t.Fatalf("entry %d: unknown kind %q", i+1, e.kind)
		}
	}
	r.finish(extra)
}

// goldenUsage makes token counts, and so /stats, the same in every run.
var goldenUsage = llmtest.Usage{Input: 20, Output: 8}

func goldenWrite(path string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": path, "content": "x"}}}, Usage: goldenUsage}
}

func goldenAsk() llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ask_user",
		Input: map[string]any{"question": "Which color?", "options": []any{"red", "blue"}}}}, Usage: goldenUsage}
}

func goldenText(text, expect string) llmtest.Turn {
	return llmtest.Turn{Text: text, Expect: expect, Usage: goldenUsage}
}

const (
	status    = `{"type":"status"}`
	askAnswer = `{"type":"question","request_id":"req_1","answers":["blue"],"reason":"answered"}`
)

func sendContent(text string) step {
	b, _ := json.Marshal(text)
	return send(`{"type":"send","content":` + string(b) + `}`)
}

func goldenCases() []goldenCase {
	roles := map[string]string{
		".arbor/roles/planner.yaml": "system: Plan before acting.\n",
		".arbor/config.yaml":        "pools:\n  thinking: [anthropic/claude-think, anthropic/claude-test]\n  fast: [anthropic/claude-fast]\n",
	}
	return []goldenCase{{
		name:  "walkthrough",
		files: map[string]string{"README.md": "# demo\nA tiny project.\n"},
		turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Input: map[string]any{"path": "README.md"}}}, Expect: "Explain", Usage: goldenUsage},
			goldenText("This project is a tiny demo.", "A tiny project."),
		},
		steps: []step{send(status), await("status_response"),
			sendContent("Explain this project without changing files."), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "subscribe",
		turns: []llmtest.Turn{goldenText("hello there", "hi")},
		steps: []step{
			send(`{"type":"subscribe","events":["nonsense"]}`), await("error"),
			send(`{"type":"subscribe","events":["assistant_message","idle"]}`), await("subscribe_response"),
			sendContent("hi"), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "confirm_allow",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenText("wrote a", "created a.txt")},
		steps: []step{sendContent("write a"), await("notification"),
			send(status), await("status_response"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "confirm_deny",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenText("a refused", "not now")},
		steps: []step{sendContent("write a"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"deny","deny_reason":"not now"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "confirm_rule_session",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenWrite("b.txt"), goldenText("wrote both", "created b.txt")},
		steps: []step{sendContent("write twice"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow","rule_pattern":"write_file","rule_scope":"session"}`),
			await("idle")},
	}, {
		name:  "question_answered",
		turns: []llmtest.Turn{goldenAsk(), goldenText("blue it is", "blue")},
		steps: []step{sendContent("pick a color"), await("notification"),
			send(status), await("status_response"),
			send(askAnswer), await("idle")},
	}, {
		name:  "question_declined",
		turns: []llmtest.Turn{goldenAsk(), goldenText("no color then", "")},
		steps: []step{sendContent("pick a color"), await("notification"),
			send(`{"type":"question","request_id":"req_1","answers":["blue"],"reason":"superseded"}`), await("error"),
			send(`{"type":"question","request_id":"req_1","answers":[],"reason":"declined"}`), await("idle")},
	}, {
		name:  "question_superseded",
		turns: []llmtest.Turn{goldenAsk(), goldenText("fine", ""), goldenText("next", "never mind")},
		steps: []step{sendContent("pick a color"), await("notification"),
			sendContent("never mind"), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "question_late",
		turns: []llmtest.Turn{goldenAsk(), goldenText("blue it is", "blue")},
		steps: []step{sendContent("pick a color"), await("notification"),
			send(askAnswer), await("idle"),
			send(`{"type":"question","request_id":"req_1","answers":["red"],"reason":"answered"}`), await("error"),
			send(`{"type":"question","request_id":"req_7","answers":["red"],"reason":"answered"}`), await("error"),
			send(status), await("status_response")},
	}, {
		name: "line_too_long",
		steps: []step{sendLong(`{"type":"send","content":"`, "a", 1<<20, `"}`), await("error"),
			send(status), await("status_response")},
	}, {
		name: "unknown_command",
		steps: []step{
			send(`{"type":"teleport"}`), await("error"),
			send(`{"type":"handoff","request_id":"handoff-1","action":"accept"}`), await("error"),
			sendRaw(`{not json`), await("error"),
			send(status), await("status_response")},
	}, {
		name: "cancel_midstream",
		turns: []llmtest.Turn{
			{Text: "one two three four", Usage: goldenUsage, Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 4}},
			goldenText("after the cancel", "again"),
		},
		steps: []step{sendContent("talk"), awaitActivity("streaming"),
			send(`{"type":"cancel"}`), await("idle"),
			send(status), await("status_response"),
			sendContent("again"), await("idle")},
	}, {
		name:  "models_role",
		files: roles,
		steps: []step{
			send(`{"type":"models","action":"status"}`), await("models_response"),
			send(`{"type":"models","action":"set_current_model_pool","pool":"huge"}`), await("models_response"),
			send(`{"type":"role","action":"list"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":""}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"ghost"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"builder"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"planner"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"planner"}`), await("role_response"),
			send(`{"type":"role","action":"explode"}`), await("role_response"),
			send(status), await("status_response")},
	}, {
		name:  "slash",
		turns: []llmtest.Turn{goldenText("hello", "hi")},
		steps: []step{sendContent("hi"), await("idle"),
			sendContent("/help"), await("info"),
			sendContent("/stats"), await("info"),
			sendContent("/new"), await("session_switched"),
			sendContent("/export"), await("error"),
			send(status), await("status_response")},
	}}
}
