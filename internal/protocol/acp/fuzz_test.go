package acp_test

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
	"github.com/arbor-run/arbor/internal/protocol/acp"
)

// fuzzBound is how long FuzzServe lets Serve run after its input ended:
// far more than any input needs (with no key, no session opens).
const fuzzBound = 10 * time.Second

// FuzzServe feeds arbitrary input to a server (one per input, on one App)
// and checks JSON-RPC's promises (docs/acp.md, Errors):
//
//   - no crash, no hang: Serve returns nil within fuzzBound of the end of
//     its input;
//   - stdout holds only JSON-RPC 2.0 objects, one per line;
//   - every request gets exactly one answer with its id; a line that is
//     not JSON, no object or no message gets one error with id null, one
//     of another JSON-RPC version one error with its id; notifications
//     and answers to nothing get no answer.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		initialize,
		initialize + "\n" + `{"jsonrpc":"2.0","id":"s","method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"x","prompt":[]}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":7}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"1.0","id":[1],"method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0"}`,
		"[1,2]\nnot json\n{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}",
		initialize + "\n" + `{"jsonrpc":"2.0","id":4,"method":"session/set_mode","params":{"sessionId":"a","modeId":"trust"}}` + "\n" +
			`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"a","cwd":"/","mcpServers":[]}}`,
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
			done <- acp.Serve(context.Background(), a, bytes.NewReader(in), &out, io.Discard, acp.Options{})
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Serve: %v\ninput %q", err, in)
			}
		case <-time.After(fuzzBound):
			t.Fatalf("Serve still runs %s after its input ended\ninput %q", fuzzBound, in)
		}
		got, err := answered(out.Bytes())
		if err != nil {
			t.Fatalf("%v\ninput %q\noutput:\n%s", err, in, out.String())
		}
		for id, n := range want {
			if got[id] != n {
				t.Fatalf("id %s answered %d times, want %d\ninput %q\noutput:\n%s", id, got[id], n, in, out.String())
			}
		}
		for id, n := range got {
			if want[id] == 0 {
				t.Fatalf("id %s answered %d times, but no request has it\ninput %q\noutput:\n%s", id, n, in, out.String())
			}
		}
	})
}

// compact is a JSON id in one spelling.
func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// expectAnswers counts the answers in is owed, by id, as JSON-RPC says.
func expectAnswers(in []byte) map[string]int {
	want := map[string]int{}
	r := protocol.NewReader(bytes.NewReader(in), 0).Untyped()
	for {
		line, err := r.Next()
		var le *protocol.LineError
		switch {
		case errors.As(err, &le):
			want["null"]++
			continue
		case err != nil:
			return want
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line.Raw, &m) != nil {
			want["null"]++
			continue
		}
		id := compact(m.ID)
		switch {
		case m.JSONRPC != "2.0":
			want[id]++
		case m.Method == "" && id != "null":
			// an answer to arbor: none owed
		case m.Method == "":
			want["null"]++
		case id != "null":
			want[id]++
		}
	}
}

// answered checks that out is JSON-RPC 2.0 lines and counts its answers by
// id.
func answered(out []byte) (map[string]int, error) {
	got := map[string]int{}
	for i, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("output line %d is no JSON object: %v", i+1, err)
		}
		if string(m["jsonrpc"]) != `"2.0"` {
			return nil, fmt.Errorf("output line %d is not JSON-RPC 2.0", i+1)
		}
		_, isResult := m["result"]
		_, isError := m["error"]
		if _, isMethod := m["method"]; isMethod {
			continue // arbor's own request or notification
		}
		if isResult == isError {
			return nil, fmt.Errorf("output line %d is neither a request nor an answer with exactly one of result and error", i+1)
		}
		got[compact(m["id"])]++
	}
	return got, nil
}
