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
// is: seq numbers (but see subscribe below), the broker's request ids
// (req_N), error codes and messages, token counts. Every seq must be
// greater than the one before it.
//
// A case (goldenCases, in golden_cases_test.go) is the scripted model, the
// workspace files and the steps that drive a recording. It may add a hook
// that changes the world outside the protocol when a given output line
// arrives — in the recording and the replay alike, so the transcript fixes
// the point where it acts — and a check that runs after a successful
// replay against the run's home (e.g. that a saved rule landed on disk).
// Neither leaves a trace in the transcript. A case may also prepare its
// workspace before the server starts with setup (e.g. make it a git
// repository, as testutil.GitInit does, for /worktree).
//
// The home of a run has the same length in every run (a temporary
// directory padded to homeLen characters): the system prompt names the
// workspace, and what counts its characters, such as the estimated token
// count of context_notice, must not change with the random part of the
// temporary directory's name.
//
// Sub-agents run beside the main agent, each on its own goroutine. A case
// with them (nodes scripts their model) fixes the order of their work with
// holds: a hold keeps one model request of one agent away from the model
// server until a given output line has arrived, e.g. the main agent's
// second request until the child's agent_started; it acts in the
// recording and the replay alike. The requests pass through an HTTP gate
// in front of the model server (modelGate), so a held request never
// delays another, and a hold that no request came to fails the run. What
// holds cannot order is what an agent does before its request leaves:
// right after spawn returns, the child's agent_started and "preparing"
// activity race the main agent's own "preparing", and every push and state
// change takes a seq, so literal seqs cannot be fixed. Such a case sets
// subscribe: the recording first subscribes the client to those events
// (a subscribe line in the transcript) whose order the holds do fix —
// activity is left out — and seqs are compared as "<seq>", while the real
// values are still checked to strictly increase.
//
// `go test -run Golden -update` rewrites the files from the current
// behaviour by running each case's steps (`-run 'Golden/<case>$'` only
// that case's); review the result by eye.

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/golden"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.jsonl golden transcripts from the current behaviour")

// goldenCase is one transcript: the scripted model, the workspace files
// and the steps that drive the server when recording, with an optional
// hook and check.
type goldenCase struct {
	name string
	// turns answer the main agent's model requests, in order.
	turns []llmtest.Turn
	// nodes, if set, answers sub-agent node N's requests from nodes[N]
	// (see treetest.Script).
	nodes treetest.Script
	// holds keep model requests back until given output lines arrive.
	holds []hold
	// subscribe, if set, is what the recording subscribes to before the
	// steps; seqs are then compared as "<seq>".
	subscribe []string
	files     map[string]string
	// setup, if set, runs with the workspace path after files are
	// written and before the server starts.
	setup func(t *testing.T, ws string)
	steps []step
	// on, if set, runs on every received output line, with the
	// workspace path, while recording and while replaying.
	on func(t *testing.T, ws string, l line)
	// check, if set, runs after a successful replay, with the run's home.
	check func(t *testing.T, home string)
}

// step drives a recording: send a line (raw: verbatim), or read output
// until a line matches.
type step struct {
	in    any // an object for "in", a string or repeat object for "in_raw"
	raw   bool
	until func(line) bool
}

// line is the part of an output envelope that steps, hooks and checks
// match on.
type line struct {
	Type    string `json:"type"`
	Seq     uint64 `json:"seq"`
	Payload struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		ArgsJSON  string `json:"args_json"`
	} `json:"payload"`
}

func send(l string) step       { return step{in: l} }
func sendRaw(text string) step { return step{in: text, raw: true} }

// sendLong sends prefix, repeat count times, then suffix, as one line.
func sendLong(prefix, repeat string, count int, suffix string) step {
	o := golden.Object{{Key: "prefix", Value: prefix}, {Key: "repeat", Value: repeat}, {Key: "count", Value: json.Number(strconv.Itoa(count))}, {Key: "suffix", Value: suffix}}
	return step{in: o, raw: true}
}

func typeIs(typ string) func(line) bool { return func(l line) bool { return l.Type == typ } }
func await(typ string) step             { return step{until: typeIs(typ)} }
func awaitActivity(kind string) step {
	return step{until: func(l line) bool { return l.Type == "activity" && l.Payload.Type == kind }}
}

// entry is one line of a transcript file: kind is in, in_raw, out or eof.
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
			home := replay(t, c, golden.ReadTranscript(t, path))
			if c.check != nil {
				c.check(t, home)
			}
		})
	}
}

// run is one server in progress: its output, the normalizer, the gate
// and the hook its received lines go through.
type run struct {
	t    *testing.T
	g    *goldenServer
	n    *normalizer
	gate *modelGate
	on   func(t *testing.T, ws string, l line)
	// anySeq makes seqs compare as "<seq>"; lastSeq is the last one seen.
	anySeq  bool
	lastSeq uint64
	eof     bool
}

// newRun starts the case's model and a server on a fresh home.
func newRun(t *testing.T, c goldenCase) *run {
	srv := llmtest.NewServer(c.turns...)
	if c.nodes != nil {
		srv = llmtest.NewServerFunc(treeResponder(c.turns, c.nodes))
	}
	t.Cleanup(srv.Close)
	modelURL := srv.URL
	var gate *modelGate
	if c.holds != nil {
		gate = startGate(t, srv.URL, c.holds)
		modelURL = gate.url
	}
	home := fixedHome(t)
	ws := writeWorkspace(t, home, c.files)
	if c.setup != nil {
		c.setup(t, ws)
	}
	r := startRun(t, reopenApp(t, modelURL, home, ws), home, ws)
	r.gate, r.on, r.anySeq = gate, c.on, c.subscribe != nil
	return r
}

// startRun starts a server on a, the app of workspace ws under home.
func startRun(t *testing.T, a *app.App, home, ws string) *run {
	g := startGolden(t, a, home, ws)
	return &run{t: t, g: g, n: newNormalizer(home)}
}

// recv returns the next output line, decoded for matching and normalized,
// after the hook has seen it, or false when the output has ended.
func (r *run) recv() (line, any, bool) {
	r.t.Helper()
	raw, ok := r.g.Recv()
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
	if l.Seq != 0 {
		if l.Seq <= r.lastSeq {
			r.t.Fatalf("seq %d after %d: %s", l.Seq, r.lastSeq, raw)
		}
		r.lastSeq = l.Seq
	}
	r.gate.see(l)
	if r.on != nil {
		r.on(r.t, r.g.ws, l)
	}
	v = r.n.normalize("", v)
	if r.anySeq {
		v = anySeq(v)
	}
	return l, v, true
}

// sendIn sends an "in" value with its placeholders restored.
func (r *run) sendIn(v any) {
	r.t.Helper()
	b, err := golden.Marshal(r.n.Restore(v))
	if err != nil {
		r.t.Fatal(err)
	}
	r.g.Send(string(b))
}

func (r *run) sendRaw(v any) {
	r.t.Helper()
	s, err := rawLine(v)
	if err != nil {
		r.t.Fatal(err)
	}
	r.g.Send(s)
}

func (r *run) closeInput() {
	if !r.eof {
		r.eof = true
		r.g.CloseInput()
	}
}

// until hands output lines to each until one matches pred (that one
// included), failing if the output ends first.
func (r *run) until(pred func(line) bool, each func(line, any)) {
	r.t.Helper()
	for {
		l, v, ok := r.recv()
		if !ok {
			r.t.Fatalf("output ended before the awaited line; diagnostics:\n%s", r.g.Diag.String())
		}
		each(l, v)
		if pred(l) {
			return
		}
	}
}

// finish ends the input, hands every remaining output line to rest and
// waits for Serve to return.
func (r *run) finish(rest func(line, any)) {
	r.t.Helper()
	r.closeInput()
	for l, v, ok := r.recv(); ok; l, v, ok = r.recv() {
		rest(l, v)
	}
	if err := r.g.Wait(); err != nil {
		r.t.Fatalf("Serve: %v", err)
	}
	r.gate.checkUsed(r.t)
}

// record runs the case's steps, after the ready line, and returns the
// exchange they produce.
func record(t *testing.T, c goldenCase) []entry {
	r := newRun(t, c)
	var es []entry
	outs := func(_ line, v any) { es = append(es, entry{Kind: "out", Value: v}) }
	r.until(func(line) bool { return true }, outs)
	steps := c.steps
	if c.subscribe != nil {
		events, err := json.Marshal(c.subscribe)
		if err != nil {
			t.Fatal(err)
		}
		steps = append([]step{send(`{"type":"subscribe","events":` + string(events) + `}`), await("subscribe_response")}, steps...)
	}
	for _, s := range steps {
		switch {
		case s.raw:
			es = append(es, entry{Kind: "in_raw", Value: s.in})
			r.sendRaw(s.in)
		case s.in != nil:
			v, err := golden.DecodeOrdered([]byte(s.in.(string)))
			if err != nil {
				t.Fatalf("step line %q: %v", s.in, err)
			}
			es = append(es, entry{Kind: "in", Value: v})
			r.sendIn(v)
		case s.until != nil:
			r.until(s.until, outs)
		}
	}
	es = append(es, entry{Kind: "eof", Value: true})
	r.finish(outs)
	return es
}

// replay drives a server from the transcript, checks its output and
// returns the run's home.
func replay(t *testing.T, c goldenCase, es []entry) string {
	r := newRun(t, c)
	for i, e := range es {
		switch e.Kind {
		case "in":
			r.sendIn(e.Value)
		case "in_raw":
			r.sendRaw(e.Value)
		case "eof":
			r.closeInput()
		case "out":
			_, got, ok := r.recv()
			if !ok {
				t.Fatalf("entry %d: output ended, want %s; diagnostics:\n%s", i+1, golden.Show(e.Value), r.g.Diag.String())
			}
			if d := golden.Diff("", golden.Plain(e.Value), golden.Plain(got)); len(d) > 0 {
				t.Fatalf("entry %d differs:\n  %s\nwant %s\ngot  %s", i+1, strings.Join(d, "\n  "), golden.Show(e.Value), golden.Show(got))
			}
		default:
			t.Fatalf("entry %d: unknown kind %q", i+1, e.Kind)
		}
	}
	r.finish(func(_ line, v any) {
		t.Errorf("unexpected output line after the transcript's end of input: %s", golden.Show(v))
	})
	return r.g.home
}
