package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestLoadScript(t *testing.T) {
	t.Parallel()

	t.Run("yaml and json examples load alike", func(t *testing.T) {
		t.Parallel()
		y, err := llmtest.LoadScript("testdata/example.yaml")
		must(t, err)
		j, err := llmtest.LoadScript("testdata/example.json")
		must(t, err)
		equal(t, "turns", len(y.Turns), 3)
		yb, _ := json.Marshal(y)
		jb, _ := json.Marshal(j)
		jsonEqual(t, "yaml vs json", yb, string(jb))

		turn := y.Turns[1]
		equal(t, "rate limit", *y.Turns[0].Fault, llmtest.Fault{Kind: llmtest.FaultRateLimit, RetryAfter: 2})
		equal(t, "usage", turn.Usage, llmtest.Usage{Input: 1200, Output: 80, CacheRead: 900, CacheWrite: 300})
		equal(t, "tool call", [2]string{turn.ToolCalls[1].ID, turn.ToolCalls[1].Name}, [2]string{"toolu_readme", "read_file"})
		equal(t, "slow delay", y.Turns[2].Fault.Delay.Std(), 5*time.Millisecond)
	})

	t.Run("the demo script is valid", func(t *testing.T) {
		t.Parallel()
		s, err := llmtest.LoadScript("../../../examples/hello.yaml")
		must(t, err)
		equal(t, "turns", len(s.Turns), 2)
		call := s.Turns[0].ToolCalls[0]
		equal(t, "tool", call.Name, "write_file")
		in, ok := call.Input.(map[string]any)
		if !ok || in["path"] != "haiku.txt" || !strings.HasSuffix(in["content"].(string), "\n") {
			t.Fatalf("want write_file input {path: haiku.txt, content: ...\\n}, got %#v", call.Input)
		}
	})

	errCases := []struct {
		name, file, body, want string
	}{
		{"empty script", "empty.yaml", "turns: []\n", "no turns"},
		{"no turns key", "none.json", `{}`, "no turns"},
		{"unknown fault kind", "fault.yaml", "turns:\n  - fault: {kind: meltdown}\n", `turn 1: unknown fault kind "meltdown"`},
		{"fault without kind", "fault2.yaml", "turns:\n  - text: hi\n  - fault: {retry_after: 1}\n", "turn 2: fault has no kind"},
		{"tool call without name", "tool.yaml", "turns:\n  - tool_calls: [{input: {a: 1}}]\n", "turn 1: tool call 1 has no name"},
		{"tool input not an object", "input.json", `{"turns":[{"tool_calls":[{"name":"x","input":[1,2]}]}]}`, "turn 1: tool call 1 (x): input must be a JSON object"},
		{"bad stop reason", "stop.yaml", "turns:\n  - {text: hi, stop_reason: bored}\n", `unknown stop_reason "bored"`},
		{"bad status", "status.yaml", "turns:\n  - fault: {kind: server_error, status: 200}\n", "not an HTTP error status"},
		{"unknown field", "typo.yaml", "turns:\n  - txt: hi\n", "field txt not found"},
		{"unknown json field", "typo.json", `{"turns":[{"tool_call":[]}]}`, `unknown field "tool_call"`},
		{"bad duration", "dur.yaml", "turns:\n  - fault: {kind: slow, delay: 150}\n", "missing unit"},
		{"numeric json duration", "dur.json", `{"turns":[{"fault":{"kind":"slow","delay":150}}]}`, `duration must be a string like "150ms"`},
		{"bad extension", "script.txt", "turns: []", `unsupported extension ".txt"`},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), tc.file)
			must(t, os.WriteFile(path, []byte(tc.body), 0o600))
			_, err := llmtest.LoadScript(path)
			if !errors.Is(err, llmtest.ErrScript) {
				t.Fatalf("want ErrScript, got %v", err)
			}
			var se *llmtest.ScriptError
			if !errors.As(err, &se) || se.File != path {
				t.Fatalf("error does not name the file %s: %v", path, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		t.Parallel()
		_, err := llmtest.LoadScript(filepath.Join(t.TempDir(), "nope.yaml"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("want ErrNotExist, got %v", err)
		}
	})
}

func TestDuration(t *testing.T) {
	t.Parallel()
	f := llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(150 * time.Millisecond)}

	b, err := json.Marshal(f)
	must(t, err)
	jsonEqual(t, "json", b, `{"kind":"slow","delay":"150ms"}`)
	var back llmtest.Fault
	must(t, json.Unmarshal(b, &back))
	equal(t, "json round trip", back, f)

	y, err := yaml.Marshal(f)
	must(t, err)
	equal(t, "yaml", string(y), "kind: slow\ndelay: 150ms\n")
	back = llmtest.Fault{}
	must(t, yaml.Unmarshal(y, &back))
	equal(t, "yaml round trip", back, f)

	if err := json.Unmarshal([]byte(`{"delay":"-1s"}`), &back); err == nil {
		t.Fatal("negative duration accepted")
	}
}

func TestServe(t *testing.T) {
	t.Parallel()

	t.Run("serves a script until ctx ends", func(t *testing.T) {
		t.Parallel()
		script, err := llmtest.LoadScript("testdata/example.yaml")
		must(t, err)
		script.Turns[0] = llmtest.Turn{Text: "served", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 1}}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		srv, err := llmtest.Serve(ctx, "127.0.0.1:0", script)
		must(t, err)
		b := clients(t, srv)
		if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || strings.HasSuffix(srv.URL, "/") {
			t.Fatalf("URL %q", srv.URL)
		}

		stream := b.ant.Messages.NewStreaming(ctxT(t), antParams("hi"))
		defer stream.Close()
		if !stream.Next() {
			t.Fatalf("no first event: %v", stream.Err())
		}
		cancel() // ends Serve: the stalled stream is cut, not left hanging
		for stream.Next() {
			t.Fatalf("event after the stall: %s", stream.Current().Type)
		}
		if stream.Err() == nil {
			t.Fatal("want the stream cut when ctx ended")
		}
		srv.Close() // still safe after ctx closed it
	})

	t.Run("rejects an invalid script", func(t *testing.T) {
		t.Parallel()
		_, err := llmtest.Serve(t.Context(), "127.0.0.1:0", llmtest.Script{})
		if !errors.Is(err, llmtest.ErrScript) {
			t.Fatalf("want ErrScript, got %v", err)
		}
	})

	t.Run("reports a bad address", func(t *testing.T) {
		t.Parallel()
		_, err := llmtest.Serve(t.Context(), "256.0.0.1:0", llmtest.Script{Turns: []llmtest.Turn{{Text: "x"}}})
		if err == nil {
			t.Fatal("want a listen error")
		}
	})
}
