package envelope_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
)

// fuzzBound is how long one input may keep Serve running: far more than
// any input needs (the model refuses every request, so turns fail at
// once).
const fuzzBound = 10 * time.Second

// FuzzServe feeds arbitrary input to the server and checks that it never
// panics, ends within fuzzBound of the input's end, writes only envelope
// lines (ready first, seqs increasing, every status_response with one) and
// answers every line that is not a valid command with an error envelope.
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
	} {
		f.Add([]byte(seed))
	}
	home := f.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		f.Fatal(err)
	}
	// Every model request is refused at once (400 is not retried), so a
	// turn ends with an error as soon as it starts.
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"fuzzing: no model"}}`)
	}))
	f.Cleanup(model.Close)
	env := map[string]string{"ANTHROPIC_BASE_URL": model.URL, "ANTHROPIC_API_KEY": "fuzz-key",
		"XDG_CONFIG_HOME": filepath.Join(home, "c"), "XDG_STATE_HOME": filepath.Join(home, "s"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(a.Close)
	f.Fuzz(func(t *testing.T, in []byte) {
		want, shell := expectedErrors(in)
		if shell || bytes.Contains(in, []byte("shell")) {
			t.Skip("may name local_shell")
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzBound)
		defer cancel()
		var out bytes.Buffer // Serve's writer writes one line at a time
		done := make(chan error, 1)
		go func() { done <- envelope.Serve(ctx, a, bytes.NewReader(in), &out, io.Discard, envelope.Options{}) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve: %v", err)
			}
		case <-time.After(2 * fuzzBound):
			t.Fatalf("Serve did not return after its context ended; input %q", in)
		}
		if ctx.Err() != nil {
			t.Fatalf("Serve ran for %s after its input ended; input %q", fuzzBound, in)
		}
		got := checkEnvelopes(t, out.Bytes())
		for code, n := range want {
			if got[code] < n {
				t.Fatalf("%d error envelopes with code %s, want at least %d (one per such input line)\ninput %q\noutput:\n%s",
					got[code], code, n, in, out.String())
			}
		}
	})
}

// checkEnvelopes checks that out holds only envelope lines, ready first,
// with increasing seqs and a seq on every status_response; it counts the
// command error envelopes (those without seq) by code.
func checkEnvelopes(t *testing.T, out []byte) map[string]int {
	t.Helper()
	if len(out) == 0 || out[len(out)-1] != '\n' {
		t.Fatalf("output does not end with a newline:\n%s", out)
	}
	codes := map[string]int{}
	var last uint64
	for i, raw := range bytes.Split(out[:len(out)-1], []byte("\n")) {
		var env struct {
			Type    string          `json:"type"`
			Seq     uint64          `json:"seq"`
			Payload json.RawMessage `json:"payload"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&env); err != nil || dec.More() {
			t.Fatalf("line %d is not an envelope (%v): %s", i+1, err, raw)
		}
		if env.Type == "" || len(env.Payload) == 0 || env.Payload[0] != '{' {
			t.Fatalf("line %d lacks a type or an object payload: %s", i+1, raw)
		}
		if (i == 0) != (env.Type == "ready") {
			t.Fatalf("line %d: ready must come first and once: %s", i+1, raw)
		}
		if env.Type == "status_response" && env.Seq == 0 {
			t.Fatalf("status_response without seq: %s", raw)
		}
		if env.Seq != 0 {
			if env.Seq <= last {
				t.Fatalf("seq %d after %d: %s", env.Seq, last, raw)
			}
			last = env.Seq
		}
		if env.Type == "error" && env.Seq == 0 {
			var p struct {
				Code string `json:"code"`
			}
			if err := json.Unmarshal(env.Payload, &p); err != nil {
				t.Fatalf("error payload %s: %v", raw, err)
			}
			codes[p.Code]++
		}
	}
	return codes
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

// expectedErrors reads in as the spec frames it (one JSON object per
// "\n"-terminated line, "\r\n" allowed, blank lines skipped, at most
// protocol.MaxLine bytes) and counts, by the error code they must be
// answered with, the lines that are not valid commands. shell reports a
// local_shell command.
func expectedErrors(in []byte) (want map[string]int, shell bool) {
	want = map[string]int{}
	lines := bytes.Split(in, []byte("\n"))
	for i, l := range lines {
		if i == len(lines)-1 && len(l) == 0 {
			break // the input ended with a newline
		}
		if i < len(lines)-1 {
			l = bytes.TrimSuffix(l, []byte("\r"))
		}
		if len(l) > protocol.MaxLine {
			want["stdin_line_too_long"]++
			continue
		}
		if i == 0 {
			l = bytes.TrimPrefix(l, []byte("\xef\xbb\xbf"))
		}
		l = bytes.Trim(l, " \t\r\n")
		if len(l) == 0 {
			continue
		}
		if !json.Valid(l) {
			want["invalid_json"]++
			continue
		}
		var head struct {
			Type json.RawMessage `json:"type"`
		}
		var typ string
		if l[0] != '{' || json.Unmarshal(l, &head) != nil || json.Unmarshal(head.Type, &typ) != nil || typ == "" {
			want["invalid_command"]++ // not an object, or no string type
			continue
		}
		// A line that frames as a command but holds bytes that are not
		// UTF-8 is refused whole with invalid_json, whatever its type, and
		// nothing is run (docs/headless-envelope.md, Framing, and the table
		// of differences from Chord). encoding/json would replace the bytes
		// with U+FFFD and fold the key's case: Chord decodes
		// {"tYpe":"\xc7"} to the type "\ufffd" and answers "unknown
		// command type", without a code. Both refuse the line; arbor's
		// code names the fault a client can fix (its encoding), and the
		// same check keeps a known command with a bad byte in a field
		// (a send's content, a local_shell command) from running as
		// something the client did not send, where Chord runs the
		// replaced text. The fuzzer found the case the oracle lacked
		// (testdata/fuzz/FuzzServe/non-utf8-type).
		if !utf8.Valid(l) {
			want["invalid_json"]++
			continue
		}
		shape, known := commandShapes[typ]
		switch {
		case !known:
			want["unknown_command"]++
		case shape != nil && json.Unmarshal(l, shape()) != nil:
			want["invalid_json"]++ // a field of the wrong type
		}
		shell = shell || typ == "local_shell"
	}
	return want, shell
}
