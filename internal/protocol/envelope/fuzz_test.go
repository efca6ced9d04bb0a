package envelope_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/testutil"
)

// fuzzBound bounds every wait of FuzzServe: far more than any input
// needs (the model refuses every request, so turns fail at once).
const fuzzBound = 10 * time.Second

// fuzzRestart is how many inputs one server handles before FuzzServe
// ends its input and starts another.
const fuzzRestart = 1000

// FuzzServe feeds arbitrary input to one long-lived server, as a gateway
// feeds one arbor process, each input followed by a status command (the
// marker), and checks the protocol's promises for every input:
//
//   - no crash, no hang: every input is answered up to its marker within
//     fuzzBound, and every fuzzRestart inputs the input ends and Serve
//     returns nil within fuzzBound;
//   - stdout holds only envelopes: ready first and once, seqs increasing
//     over the whole process, a seq on every status_response;
//   - one answer per rejected line: each line that is not a valid command
//     (over-long, not JSON, not an object, no string type, bytes that
//     are not UTF-8, an unknown type, a field of the wrong type) gets
//     exactly one error envelope, with the code the spec gives, naming
//     its line (or its type), in input order; invalid_json and
//     stdin_line_too_long answer nothing else;
//   - nothing run on a rejected line: when the server was quiet (the last
//     status said not busy, nothing pending) and the input holds only
//     rejected lines and status commands, the output is exactly their
//     answers, each status_response takes the next seq with the same
//     payload as the last (no state changed, not even its updated_at),
//     and the model gets no request (once the requests of earlier work
//     have all reached it: see settle).
//
// One server for many inputs makes an input cost what its lines cost,
// not a session's creation (about 1.3 ms); the state earlier inputs left
// is part of what is fuzzed. A failed input leaves its server: the
// fuzzer's minimization runs it again on fresh ones, and a saved input
// runs alone on a fresh server with go test -run FuzzServe/NAME. An
// input that should change nothing also gets a fresh server when an
// earlier one started a navigation (see fuzzHost.unsettled).
//
// Inputs that could name local_shell are skipped: the fuzzer must not run
// the shell commands it makes up.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		`{"type":"status"}`,
		`{"type":"subscribe","events":["idle","error","status"]}` + "\n" + `{"type":"send","content":"hi"}`,
		`{"type":"subscribe","events":[]}` + "\n" + `{"type":"send","content":"hi"}` + "\n" + `{"type":"status"}`,
		`{"type":"send","content":"/models"}` + "\n" + `{"type":"send","content":"/role planner"}` + "\n" + `{"type":"send","content":"/new"}`,
		`{"type":"send","content":"/resume 123"}` + "\n" + `{"type":"send","content":"/loop on"}` + "\n" + `{"type":"send","content":"/export"}`,
		`{"type":"send","content":"/stats"}` + "\n" + `{"type":"send","content":"/help"}` + "\n" + `{"type":"send","content":"/compact"}`,
		`{"type":"models","action":"set_current_model_pool","pool":"x"}` + "\n" + `{"type":"models","action":"status"}`,
		`{"type":"role","action":"list"}` + "\n" + `{"type":"role","action":"set","role":"builder"}`,
		`{"type":"confirm","request_id":"req_1","action":"allow","rule_pattern":"x","rule_scope":"session"}`,
		`{"type":"question","request_id":"req_1","answers":["a"],"reason":"answered"}`,
		`{"type":"handoff","request_id":"handoff-1","action":"deny","deny_reason":"no"}`,
		`{"type":"send","content":"go"}` + "\n" + `{"type":"cancel"}` + "\n" + `{"type":"cancel"}`,
		`{"type":"send","content":5}` + "\n" + `{"type":"subscribe","events":"idle"}` + "\n" + `{"type":"role","role":[]}`,
		`{"type":"teleport"}` + "\n" + `{"type":""}` + "\n" + `{"type":7}` + "\n" + `{}` + "\n" + `[1]` + "\n" + `null`,
		"{not json\n\n  \r\n\xef\xbb\xbf{\"type\":\"status\"}\r\n{\"type\":\"st\\u0061tus\"}",
		`{"type":"status","type":"send","content":""}` + "\n" + `{"type":"question","reason":"superseded"}`,
		"{\"TYPE\":\"status\"}\n{\"type\":\"status\",\"x\":\"\xff\"}\n[\"\xff\"]",
	} {
		f.Add([]byte(seed))
	}
	h := newFuzzHost(f)
	f.Cleanup(func() {
		if err := h.stop(); err != nil {
			f.Error(err)
		}
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte("shell")) {
			t.Skip("may name local_shell")
		}
		h.run(t, in)
	})
}

// fuzzHost is FuzzServe's app, model and current server.
type fuzzHost struct {
	app      *app.App
	model    *httptest.Server
	requests atomic.Int64 // model requests so far
	conns    atomic.Int64 // the model server's open connections
	// unsettled requests: work that may have sent the model a request
	// ran since the model last settled (see settle).
	inFlight bool

	srv     *testutil.PipeServer
	inputs  int    // inputs the server has handled
	lines   int    // physical lines written to it
	lastSeq uint64 // the highest seq it has written
	// markerSeq is the seq of the last marker's status_response.
	markerSeq uint64
	// quiet: the server's last status said nothing is running or
	// pending; status is that status_response's payload.
	quiet  bool
	status json.RawMessage
	// broken: an input failed before it was checked, so the server's
	// state is unknown; the next input starts a fresh one.
	broken bool
	// unsettled: the server accepted work that runs after its answer
	// without making status busy (a navigation: /new, /resume, /compact,
	// /worktree, a model pool switch made while idle, which end with an
	// idle or an error envelope), so a status that says it is idle does
	// not prove that nothing will change any more.
	unsettled bool
}

func newFuzzHost(f *testing.F) *fuzzHost {
	h := &fuzzHost{}
	home := f.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".arbor"), 0o755); err != nil {
		f.Fatal(err)
	}
	// Work past the limit is refused (queue_full), so inputs that send
	// much cannot pile up turns for the inputs after them.
	if err := os.WriteFile(filepath.Join(ws, ".arbor", "config.yaml"), []byte("headless: {queue_limit: 4}\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	// Every model request is refused at once (400 is not retried), so a
	// turn ends with an error as soon as it starts.
	model := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"fuzzing: no model"}}`)
	}))
	model.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			h.conns.Add(1)
		case http.StateClosed, http.StateHijacked:
			h.conns.Add(-1)
		}
	}
	model.Start()
	f.Cleanup(model.Close)
	h.model = model
	env := map[string]string{"ANTHROPIC_BASE_URL": model.URL, "ANTHROPIC_API_KEY": "fuzz-key",
		"XDG_CONFIG_HOME": filepath.Join(home, "c"), "XDG_STATE_HOME": filepath.Join(home, "s"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(a.Close)
	h.app = a
	return h
}

// run checks one input on the current server, or on a fresh one: after
// fuzzRestart inputs, after a failed input, and when an input that
// should change nothing follows work that may still change something
// while status says the server is idle (see unsettled).
func (h *fuzzHost) run(t *testing.T, in []byte) {
	chunk := in
	if len(chunk) > 0 && chunk[len(chunk)-1] != '\n' {
		chunk = append(bytes.Clone(chunk), '\n') // the marker gets a line of its own
	}
	if h.srv != nil && (h.broken || h.inputs >= fuzzRestart) {
		if err := h.stop(); err != nil {
			t.Fatalf("after %d inputs: %v", h.inputs, err)
		}
	}
	lines := classifyLines(chunk, h.lines)
	if h.srv != nil && h.unsettled && inert(lines) {
		if err := h.stop(); err != nil {
			t.Fatalf("after %d inputs: %v", h.inputs, err)
		}
	}
	if h.srv == nil {
		lines = classifyLines(chunk, 0)
	}
	for _, l := range lines {
		if l.typ == "local_shell" {
			t.Skip("names local_shell")
		}
	}
	if h.srv == nil {
		h.start(t)
	}
	h.broken = true // until the input is checked
	h.check(t, in, chunk, lines)
	h.broken = false
}

// settle waits until the model has counted every request sent so far.
// A request that arbor cancels (a turn cancelled, or a server's input
// ended) may have been written to the connection already: arbor's turn
// has ended, but the model server reads the request and counts it later,
// during another input, which would count against that input. Closing the
// model's connections and waiting until each is closed waits out every
// such request: a connection is closed only after the request read on it
// was handled, and unread bytes are dropped with it.
func (h *fuzzHost) settle(t *testing.T) {
	h.model.CloseClientConnections()
	deadline := time.Now().Add(fuzzBound)
	for h.conns.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the model's %d connections still open after %s", h.conns.Load(), fuzzBound)
		}
		time.Sleep(100 * time.Microsecond)
	}
	h.inFlight = false
}

// inert reports whether lines hold only rejected lines and status
// commands, which change nothing.
func inert(lines []lineClass) bool {
	for _, l := range lines {
		if l.code == "" && l.typ != "status" {
			return false
		}
	}
	return true
}

// start starts a server and reads its ready.
func (h *fuzzHost) start(t *testing.T) {
	h.srv = testutil.StartPipeServer(func(in io.Reader, out io.Writer) error {
		return envelope.Serve(context.Background(), h.app, in, out, io.Discard, envelope.Options{})
	})
	h.inputs, h.lines, h.lastSeq, h.markerSeq = 0, 0, 0, 0
	h.quiet, h.status, h.broken, h.unsettled = false, nil, false, false
	raw, err := h.srv.Next(fuzzBound)
	if err != nil {
		t.Fatalf("no ready: %v", err)
	}
	if e := parseEnvelope(t, raw); e.Type != "ready" {
		t.Fatalf("first line is not ready: %s", raw)
	}
	// Before any command the server is idle, but the oracle learns it
	// from a status, like any client.
}

// stop ends the server's input and checks that it returns and that what
// it writes meanwhile is still envelopes.
func (h *fuzzHost) stop() error {
	if h.srv == nil {
		return nil
	}
	srv, broken := h.srv, h.broken
	h.srv = nil
	h.inFlight = true // its requests cancelled at the input's end
	err := srv.Close(fuzzBound)
	if broken {
		return nil // a failed input was reported already
	}
	if err != nil {
		return err
	}
	for {
		raw, err := srv.Next(fuzzBound)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if e, err := decodeEnvelope(raw); err != nil {
			return err
		} else if e.Seq != 0 && e.Seq <= h.lastSeq {
			return fmt.Errorf("seq %d after %d at input end: %s", e.Seq, h.lastSeq, raw)
		} else if e.Seq != 0 {
			h.lastSeq = e.Seq
		}
	}
}

// check sends chunk (in, newline-terminated) and the marker, reads the
// output up to the marker's status_response, and checks it against
// lines, chunk's lines as the spec frames them.
func (h *fuzzHost) check(t *testing.T, in, chunk []byte, lines []lineClass) {
	quiet, lastStatus, seq := h.quiet, h.status, h.markerSeq+1
	if quiet && inert(lines) && h.inFlight {
		h.settle(t)
	}
	h.inFlight = h.inFlight || !inert(lines)
	requests := h.requests.Load()
	statuses := 1 // the marker
	for _, l := range lines {
		if l.typ == "status" && l.code == "" {
			statuses++
		}
		h.unsettled = h.unsettled || l.unsettling
	}
	h.srv.Send(append(bytes.Clone(chunk), `{"type":"status"}`+"\n"...))
	var got []envelopeLine
	for seen := 0; seen < statuses; {
		raw, err := h.srv.Next(fuzzBound)
		if err != nil {
			t.Fatalf("input %d of this server not answered up to its marker: %v\ninput %q\noutput so far:\n%s", h.inputs+1, err, in, dump(got))
		}
		e := parseEnvelope(t, raw)
		switch {
		case e.Type == "ready":
			t.Fatalf("a second ready: %s", raw)
		case e.Type == "status_response" && e.Seq == 0:
			t.Fatalf("status_response without seq: %s", raw)
		case e.Seq != 0 && e.Seq <= h.lastSeq:
			t.Fatalf("seq %d after %d: %s", e.Seq, h.lastSeq, raw)
		}
		if e.Seq != 0 {
			h.lastSeq = e.Seq
		}
		if e.Type == "status_response" {
			seen++
		}
		got = append(got, e)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\ninput %q (input %d of this server, its line 1 is line %d)\noutput:\n%s",
			fmt.Sprintf(format, args...), in, h.inputs+1, h.lines+1, dump(got))
	}
	if quiet && inert(lines) {
		// Nothing may change: exactly the answers, in order.
		var want []lineClass
		for _, l := range lines {
			if l.code != "" || l.typ == "status" {
				want = append(want, l)
			}
		}
		want = append(want, lineClass{typ: "status"})
		if len(got) != len(want) {
			fail("%d envelopes for %d rejected lines and status commands on a quiet server", len(got), len(want))
		}
		for i, l := range want {
			e := got[i]
			if l.code == "" {
				if e.Type != "status_response" || !bytes.Equal(e.Payload, lastStatus) {
					fail("envelope %d: want a status_response with the last status's payload %s", i+1, lastStatus)
				}
				if e.Seq != seq {
					fail("envelope %d: seq %d, want %d: something changed the state", i+1, e.Seq, seq)
				}
				seq = e.Seq + 1
			} else if !l.answeredBy(e) {
				fail("envelope %d does not answer line %d (%s)", i+1, l.line, l.code)
			}
		}
		if n := h.requests.Load(); n != requests {
			fail("the model got %d requests", n-requests)
		}
	} else {
		// Every rejected line is answered once, in order, among the
		// answers of the valid commands.
		var errs []envelopeLine
		for _, e := range got {
			if e.Type == "error" && e.Seq == 0 {
				errs = append(errs, e)
			}
		}
		j := 0
		for _, l := range lines {
			if l.code == "" {
				continue
			}
			for j < len(errs) && !l.answeredBy(errs[j]) {
				if rejectOnly(errs[j].code) {
					fail("error envelope %q (%s) answers no rejected line; line %d (%s) is next", errs[j].message, errs[j].code, l.line, l.code)
				}
				j++
			}
			if j == len(errs) {
				fail("line %d is not answered with %s", l.line, l.code)
			}
			j++
		}
		for ; j < len(errs); j++ {
			if rejectOnly(errs[j].code) {
				fail("error envelope %q (%s) answers no rejected line", errs[j].message, errs[j].code)
			}
		}
	}
	marker := got[len(got)-1]
	var st struct {
		Busy            bool            `json:"busy"`
		Phase           string          `json:"phase"`
		RunningJobs     int             `json:"running_jobs"`
		PendingConfirm  json.RawMessage `json:"pending_confirm"`
		PendingQuestion json.RawMessage `json:"pending_question"`
		PendingHandoff  json.RawMessage `json:"pending_handoff"`
	}
	if err := json.Unmarshal(marker.Payload, &st); err != nil {
		fail("status_response payload: %v", err)
	}
	null := func(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }
	h.quiet = !h.unsettled && !st.Busy && st.Phase == "" && st.RunningJobs == 0 &&
		null(st.PendingConfirm) && null(st.PendingQuestion) && null(st.PendingHandoff)
	h.status, h.markerSeq = marker.Payload, marker.Seq
	h.inputs++
	h.lines += bytes.Count(chunk, []byte("\n")) + 1
}

// rejectOnly reports the codes that only a rejected line is answered
// with: no valid command fails with them.
func rejectOnly(code string) bool { return code == "invalid_json" || code == "stdin_line_too_long" }

// envelopeLine is one output line.
type envelopeLine struct {
	Type    string
	Seq     uint64
	Payload json.RawMessage
	raw     []byte
	// code and message of an error envelope.
	code, message string
}

// decodeEnvelope decodes one output line, which must be exactly an
// envelope: {type, seq?, payload} with an object payload.
func decodeEnvelope(raw []byte) (envelopeLine, error) {
	var env struct {
		Type    string          `json:"type"`
		Seq     uint64          `json:"seq"`
		Payload json.RawMessage `json:"payload"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil || dec.More() {
		return envelopeLine{}, fmt.Errorf("not an envelope (%v): %s", err, raw)
	}
	if env.Type == "" || len(env.Payload) == 0 || env.Payload[0] != '{' {
		return envelopeLine{}, fmt.Errorf("no type or no object payload: %s", raw)
	}
	e := envelopeLine{Type: env.Type, Seq: env.Seq, Payload: env.Payload, raw: raw}
	if e.Type == "error" {
		var p struct{ Code, Message string }
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			return e, fmt.Errorf("error payload: %v: %s", err, raw)
		}
		e.code, e.message = p.Code, p.Message
	}
	return e, nil
}

func parseEnvelope(t *testing.T, raw []byte) envelopeLine {
	t.Helper()
	e, err := decodeEnvelope(raw)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func dump(es []envelopeLine) string {
	var b strings.Builder
	for _, e := range es {
		b.Write(e.raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// lineClass is what the spec says of one physical input line: blank
// (zero), a valid command (typ), or rejected (code, the error code it
// must be answered with, and the start of the answer's message).
type lineClass struct {
	line   int    // physical line number in the input
	typ    string // the command's type, when it has one
	code   string // "" unless rejected
	prefix string // the answer's message starts so
	// unsettling: a valid command that may start work that status does
	// not show (see fuzzHost.unsettled).
	unsettling bool
}

func (l lineClass) answeredBy(e envelopeLine) bool {
	return e.Type == "error" && e.Seq == 0 && e.code == l.code && strings.HasPrefix(e.message, l.prefix)
}

// commandShapes are the fields of each command with their types, as the
// spec gives them; status and cancel take none (extra fields are
// allowed).
var commandShapes = map[string]func() any{
	"subscribe": func() any { return new(struct{ Events []string }) },
	"status":    nil,
	"send":      func() any { return new(struct{ Content string }) },
	"models":    func() any { return new(struct{ Action, Pool string }) },
	"role":      func() any { return new(struct{ Action, Role string }) },
	"confirm": func() any {
		return new(struct {
			RequestID     string `json:"request_id"`
			FinalArgsJSON string `json:"final_args_json"`
			DenyReason    string `json:"deny_reason"`
			RulePattern   string `json:"rule_pattern"`
			RuleScope     string `json:"rule_scope"`
			Action        string
		})
	},
	"question": func() any {
		return new(struct {
			RequestID string `json:"request_id"`
			Answers   []string
			Reason    string
		})
	},
	"handoff": func() any {
		return new(struct {
			RequestID  string `json:"request_id"`
			DenyReason string `json:"deny_reason"`
			Action     string
			Agent      string
			Pool       string
		})
	},
	"cancel":      nil,
	"local_shell": func() any { return new(struct{ Command, Content string }) },
}

// classifyLines reads chunk as the spec frames it (one JSON object per
// "\n"-terminated line, "\r\n" allowed, blank lines skipped, at most
// protocol.MaxLine bytes, a byte order mark ignored at the start of the
// stream) and classifies its lines but the blank ones. offset is the
// number of lines before chunk in the stream.
func classifyLines(chunk []byte, offset int) []lineClass {
	var out []lineClass
	lines := bytes.Split(chunk, []byte("\n"))
	for i, l := range lines {
		if i == len(lines)-1 && len(l) == 0 {
			break // the chunk ends with a newline
		}
		c, decode := classify(l, offset == 0 && i == 0)
		c.line = offset + i + 1
		switch {
		case decode:
			c.prefix = fmt.Sprintf("%s: line %d: ", c.typ, c.line)
		case c.code != "" && c.prefix == "":
			c.prefix = fmt.Sprintf("line %d: ", c.line)
		}
		if c.code != "" || c.typ != "" {
			out = append(out, c)
		}
	}
	return out
}

// classify classifies one line without its "\n"; the zero lineClass is a
// blank line. The checks come in the server's order: framing (length,
// JSON, object, type), then UTF-8, then the command table. decode
// reports a command whose fields do not decode.
func classify(l []byte, first bool) (_ lineClass, decode bool) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	if len(l) > protocol.MaxLine {
		return lineClass{code: "stdin_line_too_long"}, false
	}
	if first {
		l = bytes.TrimPrefix(l, []byte("\xef\xbb\xbf"))
	}
	l = bytes.Trim(l, " \t\r\n")
	if len(l) == 0 {
		return lineClass{}, false
	}
	if !json.Valid(l) {
		return lineClass{code: "invalid_json"}, false
	}
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	var typ string
	if l[0] != '{' || json.Unmarshal(l, &head) != nil || json.Unmarshal(head.Type, &typ) != nil || typ == "" {
		return lineClass{code: "invalid_command"}, false // not an object, or no string type
	}
	// A line that frames as a command but holds bytes that are not UTF-8
	// is refused whole with invalid_json, whatever its type, and nothing
	// is run (docs/headless-envelope.md, Framing, and the table of
	// differences from Chord). encoding/json would replace the bytes with
	// U+FFFD and fold the key's case: Chord decodes {"tYpe":"\xc7"} to the
	// type "\ufffd" and answers "unknown command type", without a code.
	// Both refuse the line; arbor's code names the fault a client can fix
	// (its encoding), and the same check keeps a known command with a bad
	// byte in a field (a send's content, a local_shell command) from
	// running as something the client did not send, where Chord runs the
	// replaced text. The fuzzer found the case the oracle lacked
	// (testdata/fuzz/FuzzServe/non-utf8-type).
	if !utf8.Valid(l) {
		return lineClass{typ: typ, code: "invalid_json"}, false
	}
	shape, known := commandShapes[typ]
	switch {
	case !known:
		return lineClass{typ: typ, code: "unknown_command", prefix: fmt.Sprintf("unknown command type %q", typ)}, false
	case shape != nil && json.Unmarshal(l, shape()) != nil:
		return lineClass{typ: typ, code: "invalid_json"}, true // a field of the wrong type
	}
	c := lineClass{typ: typ}
	switch typ {
	case "models":
		c.unsettling = true
	case "send":
		var send struct{ Content string }
		json.Unmarshal(l, &send)
		for _, nav := range []string{"/new", "/resume", "/compact", "/worktree", "/models"} {
			c.unsettling = c.unsettling || strings.Contains(send.Content, nav)
		}
	}
	return c, false
}
