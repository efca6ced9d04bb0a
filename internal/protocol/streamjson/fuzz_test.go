package streamjson_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// fuzzBound is how long FuzzServe lets Serve run after its input ended:
// far more than any input needs (with no key, every turn ends at once).
const fuzzBound = 10 * time.Second

// FuzzServe feeds arbitrary input to a server (one per input; a session
// is only created by a line that needs one) and checks the protocol's
// promises (docs/headless-stream-json.md):
//
//   - no crash, no hang: Serve returns nil within fuzzBound of the
//     input's end;
//   - stdout holds only JSON objects with a string type, one per line;
//   - one answer per request: every control_request Serve can decode gets
//     exactly one control_response with its request_id (success or
//     error), every registry_request one registry_response, every user
//     message that is a turn one result; nothing answers a request that
//     was not sent;
//   - a shutdown request is answered and ends the reading: the lines
//     after it get nothing, and work queued before it (a model switch, a
//     config reload, a turn) is answered at most once;
//   - nothing run on a rejected line: an input with no request and no
//     turn (lines that are not JSON objects with a type, unknown types,
//     fields of the wrong type, control_responses nobody asked for)
//     gets no output at all.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		initialize,
		`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image"}]}}`,
		`{"type":"control_request","request_id":"x","request":{"subtype":"interrupt"}}`,
		`{"type":"control_request","request":{"subtype":"switch_model"}}`,
		`{"type":"control_response","response":{"subtype":"success","request_id":"nope","response":{"behavior":"allow"}}}`,
		`{"type":"registry_request","request_id":"r","domain":"tools","action":"get","params":{"name":7}}`,
		`{"type":"user","message":{"content":12}}`,
		"{\"type\":\"user\"}\n\n\r\n{",
		`[1,2,3]`,
		`{"type":"control_request","request_id":"m","request":{"subtype":"switch_model","model":"anthropic/claude-test"}}` + "\n" +
			`{"type":"control_request","request_id":"s","request":{"subtype":"shutdown"}}` + "\n" +
			`{"type":"control_request","request_id":"after","request":{"subtype":"mcp_status"}}`,
		`{"type":"control_request","request_id":"d","request":{"subtype":"reload_config"}}` + "\n" +
			`{"type":"control_request","request_id":"d","request":{"subtype":"config_override","approval_mode":"nope"}}` + "\n" +
			`{"type":"registry_request","request_id":"p","domain":"permissions","action":"list"}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":"done"}]}}` + "\n" +
			`{"type":"control_request","request_id":"q","request":{"subtype":"mcp_message","server_name":"none","message":{}}}`,
	} {
		f.Add([]byte(seed))
	}
	home := f.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "c"), "XDG_STATE_HOME": filepath.Join(home, "s"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: home, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(a.Close)
	f.Fuzz(func(t *testing.T, in []byte) {
		want := expectAnswers(in)
		var out bytes.Buffer
		done := make(chan error, 1)
		go func() {
			// No key: every turn ends with an error result instead of a call.
			done <- streamjson.Serve(context.Background(), a, bytes.NewReader(in), &out, io.Discard, streamjson.Options{})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve: %v\ninput %q", err, in)
			}
		case <-time.After(fuzzBound):
			t.Fatalf("Serve still runs %s after its input ended\ninput %q", fuzzBound, in)
		}
		if err := want.check(out.Bytes()); err != nil {
			t.Fatalf("%v\ninput %q\noutput:\n%s", err, in, out.String())
		}
	})
}

// answers is what an input is owed, counted by request_id.
type answers struct {
	// controls and registries: requests answered at once (exactly one
	// answer each), and queued ones, which a shutdown may leave
	// unanswered (at most one).
	controls, queuedControls     map[string]int
	registries, queuedRegistries map[string]int
	turns                        int
	shutdown                     bool // a shutdown request ends the input
	active                       bool // some line is a request or a turn
}

// expectAnswers reads in as Serve frames it (the framing has a fuzz
// target of its own) and counts what each line is owed.
func expectAnswers(in []byte) answers {
	w := answers{controls: map[string]int{}, queuedControls: map[string]int{}, registries: map[string]int{}, queuedRegistries: map[string]int{}}
	r := protocol.NewReader(bytes.NewReader(in), 0)
	for !w.shutdown {
		line, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			continue // a rejected line: Serve ignores it
		}
		switch line.Type {
		case "user":
			if streamjson.UserTurn(line.Raw) {
				w.turns++
				w.active = true
			}
		case "control_request":
			req, err := streamjson.DecodeControlRequest(line.Raw)
			if err != nil {
				continue
			}
			w.active = true
			switch {
			case req.Subtype == "switch_model" && req.Model != "", req.Subtype == "set_model" && req.Model != "", req.Subtype == "reload_config":
				w.queuedControls[req.ID]++ // answered when it runs
			default:
				w.controls[req.ID]++
			}
			w.shutdown = req.Subtype == "shutdown"
		case "registry_request":
			id, err := streamjson.DecodeRegistryRequest(line.Raw)
			if err != nil {
				continue
			}
			w.active = true
			w.queuedRegistries[id]++ // the tools domain waits for the session
		}
	}
	if !w.shutdown {
		// At the input's end queued work runs: it is owed its answer.
		for id, n := range w.queuedControls {
			w.controls[id] += n
		}
		for id, n := range w.queuedRegistries {
			w.registries[id] += n
		}
		w.queuedControls, w.queuedRegistries = map[string]int{}, map[string]int{}
	}
	return w
}

// check checks Serve's output against what the input was owed.
func (w answers) check(out []byte) error {
	if !w.active && len(out) > 0 {
		return errors.New("output for an input with no request and no turn")
	}
	controls, registries, results := map[string]int{}, map[string]int{}, 0
	r := protocol.NewReader(bytes.NewReader(out), 0)
	for {
		line, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("output line is not a typed JSON object: %w", err)
		}
		switch line.Type {
		case "control_response":
			var resp struct {
				Response struct {
					Subtype   string  `json:"subtype"`
					RequestID *string `json:"request_id"`
				} `json:"response"`
			}
			if err := json.Unmarshal(line.Raw, &resp); err != nil || resp.Response.RequestID == nil ||
				resp.Response.Subtype != "success" && resp.Response.Subtype != "error" {
				return fmt.Errorf("malformed control_response %s", line.Raw)
			}
			controls[*resp.Response.RequestID]++
		case "registry_response":
			var resp struct {
				RequestID *string `json:"request_id"`
			}
			if err := json.Unmarshal(line.Raw, &resp); err != nil || resp.RequestID == nil {
				return fmt.Errorf("malformed registry_response %s", line.Raw)
			}
			registries[*resp.RequestID]++
		case "result":
			results++
		}
	}
	if err := owed("control_response", controls, w.controls, w.queuedControls); err != nil {
		return err
	}
	if err := owed("registry_response", registries, w.registries, w.queuedRegistries); err != nil {
		return err
	}
	switch {
	case !w.shutdown && results != w.turns:
		return fmt.Errorf("%d results for %d turns", results, w.turns)
	case results > w.turns:
		return fmt.Errorf("%d results for %d turns before a shutdown", results, w.turns)
	}
	return nil
}

// owed compares the answers got by request_id with those owed: exactly
// want, plus at most maybe.
func owed(kind string, got, want, maybe map[string]int) error {
	for id, n := range got {
		if n < want[id] || n > want[id]+maybe[id] {
			return fmt.Errorf("%d %ss with request_id %q, want %d (and up to %d more)", n, kind, id, want[id], maybe[id])
		}
	}
	for id, n := range want {
		if n > 0 && got[id] == 0 {
			return fmt.Errorf("no %s with request_id %q, want %d", kind, id, n)
		}
	}
	return nil
}
