package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/testutil"
)

// FuzzScript loads arbitrary bytes as a .yaml or .json script and checks
// what the script format promises (docs/llmtest.md):
//
//   - LoadScript never panics; it fails with a *ScriptError naming the
//     file (ErrScript);
//   - a script it loads validates, survives a round trip through JSON,
//     and every turn answers in both wire formats: the message and every
//     stream event are JSON, and the streamed text, thinking, tool names
//     and tool inputs put back together are the scripted ones (a tool
//     input the compact JSON object scripted, or raw_input as written; a
//     non-streaming Anthropic message refuses raw_input that is not JSON
//     with an error naming it).
func FuzzScript(f *testing.F) {
	for _, name := range []string{"example.yaml", "example.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, strings.HasSuffix(name, ".json"))
	}
	for _, s := range []string{
		"turns:\n  - text: hi\n",
		"turns: []\n",
		"turns:\n  - tool_calls: [{name: t, input: '{\"a\": [1, 2.5, null]}'}, {name: u, raw_input: '{\"x\":'}]\n",
		"turns:\n  - stop_reason: refusal\n    usage: {input: -1}\n",
		"turns:\n  - fault: {kind: stall, after_events: 2, stall: 10ms}\n    thinking: \"déjà vu\"\n",
		"turns:\n  - tool_calls: [{name: t, input: [1]}]\n",
		"turns:\n  - txet: typo\n",
		"turns:\n  - fault: {kind: rate_limit, status: 200}\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"turns":[{"text":"a b","tool_calls":[{"id":"x","name":"n","input":{"k":"v"}}],"fault":{"kind":"slow","delay":"1ms"}}]}`), true)
	dir := testutil.MemDir(f)
	f.Fuzz(func(t *testing.T, data []byte, asJSON bool) {
		path := filepath.Join(dir, "script.yaml")
		if asJSON {
			path = filepath.Join(dir, "script.json")
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := LoadScript(path)
		if err != nil {
			var se *ScriptError
			if !errors.As(err, &se) || !errors.Is(err, ErrScript) || se.File != path || !strings.HasPrefix(err.Error(), "llmtest: script "+path+": ") {
				t.Fatalf("LoadScript: %v (%T) is not a ScriptError naming the file", err, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("a loaded script does not validate: %v", err)
		}
		// Round trip through JSON.
		encoded, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("a loaded script does not encode: %v", err)
		}
		back := filepath.Join(dir, "back.json")
		if err := os.WriteFile(back, encoded, 0o600); err != nil {
			t.Fatal(err)
		}
		s2, err := LoadScript(back)
		if err != nil {
			t.Fatalf("the script as JSON does not load: %v\n%s", err, encoded)
		}
		if again, _ := json.Marshal(s2); !bytes.Equal(again, encoded) {
			t.Fatalf("round trip changed the script:\n%s\n%s", encoded, again)
		}
		req := Request{Body: []byte(`{"messages":[]}`), Model: "m", IncludeUsage: true}
		for i, turn := range s.Turns {
			checkAnthropic(t, i+1, turn, req)
			checkOpenAI(t, i+1, turn, req)
		}
	})
}

// scriptedInput is what a tool call's input is on the wire.
func scriptedInput(t *testing.T, c ToolCall) string {
	t.Helper()
	if c.RawInput != "" {
		return c.RawInput
	}
	in, err := inputJSON(c.Input)
	if err != nil {
		t.Fatalf("a validated call's input: %v", err)
	}
	return string(in)
}

func checkAnthropic(t *testing.T, n int, turn Turn, req Request) {
	t.Helper()
	// A message cannot carry raw_input that is not JSON; the request is
	// refused with an error saying so.
	carried := true
	for _, c := range turn.ToolCalls {
		carried = carried && (c.RawInput == "" || json.Valid([]byte(c.RawInput)))
	}
	switch a, err := (anthropic{}).resolve(turn, req); {
	case err != nil && (carried || !strings.Contains(err.Error(), "raw_input")):
		t.Fatalf("turn %d does not resolve: %v", n, err)
	case err == nil && !carried:
		t.Fatalf("turn %d: a message was made with raw_input that is not JSON", n)
	case err == nil && !json.Valid(anthropic{}.message(a)):
		t.Fatalf("turn %d: the Anthropic message is not JSON", n)
	}
	req.Stream = true
	a, err := anthropic{}.resolve(turn, req)
	if err != nil {
		t.Fatalf("turn %d does not resolve: %v", n, err)
	}
	var text, thinking strings.Builder // a long text streams in many pieces
	inputs := map[int]*strings.Builder{}
	names := map[int]string{}
	call := map[int]int{} // tool_use block index → call index
	for _, ev := range (anthropic{}).events(a) {
		var e struct {
			Index        int      `json:"index"`
			Delta        antDelta `json:"delta"`
			ContentBlock antBlock `json:"content_block"`
		}
		if err := json.Unmarshal(ev.data, &e); err != nil {
			t.Fatalf("turn %d: event %s is not JSON: %v", n, ev.data, err)
		}
		switch d := e.Delta; {
		case d.Text != nil:
			text.WriteString(*d.Text)
		case d.Thinking != nil:
			thinking.WriteString(*d.Thinking)
		case d.PartialJSON != nil:
			inputs[call[e.Index]].WriteString(*d.PartialJSON)
		}
		if e.ContentBlock.Type == "tool_use" {
			call[e.Index] = len(names)
			inputs[len(names)] = &strings.Builder{}
			names[len(names)] = e.ContentBlock.Name
		}
	}
	if text.String() != turn.Text || thinking.String() != turn.Thinking {
		t.Fatalf("turn %d: Anthropic stream text %q thinking %q, want %q %q", n, text.String(), thinking.String(), turn.Text, turn.Thinking)
	}
	checkCalls(t, n, "Anthropic", turn, inputs, names, len(a.Calls) > 0)
}

func checkOpenAI(t *testing.T, n int, turn Turn, req Request) {
	t.Helper()
	a, err := openai{}.resolve(turn, req)
	if err != nil {
		t.Fatalf("turn %d does not resolve: %v", n, err)
	}
	if !json.Valid(openai{}.message(a)) {
		t.Fatalf("turn %d: the OpenAI message is not JSON", n)
	}
	var text, thinking strings.Builder
	inputs := map[int]*strings.Builder{}
	names := map[int]string{}
	for _, ev := range (openai{}).events(a) {
		if string(ev.data) == "[DONE]" {
			continue
		}
		var c oaChunk
		if err := json.Unmarshal(ev.data, &c); err != nil {
			t.Fatalf("turn %d: chunk %s is not JSON: %v", n, ev.data, err)
		}
		for _, ch := range c.Choices {
			if d := ch.Delta; d.Content != nil {
				text.WriteString(*d.Content)
			}
			if d := ch.Delta; d.ReasoningContent != nil {
				thinking.WriteString(*d.ReasoningContent)
			}
			for _, tc := range ch.Delta.ToolCalls {
				if inputs[tc.Index] == nil {
					inputs[tc.Index] = &strings.Builder{}
				}
				inputs[tc.Index].WriteString(tc.Function.Arguments)
				names[tc.Index] += tc.Function.Name
			}
		}
	}
	if text.String() != turn.Text || thinking.String() != turn.Thinking {
		t.Fatalf("turn %d: OpenAI stream text %q thinking %q, want %q %q", n, text.String(), thinking.String(), turn.Text, turn.Thinking)
	}
	checkCalls(t, n, "OpenAI", turn, inputs, names, len(a.Calls) > 0)
}

// checkCalls compares the calls put back together from a stream with the
// scripted ones.
func checkCalls(t *testing.T, n int, format string, turn Turn, inputs map[int]*strings.Builder, names map[int]string, any bool) {
	t.Helper()
	if len(names) != len(turn.ToolCalls) || any != (len(turn.ToolCalls) > 0) {
		t.Fatalf("turn %d: %s stream has %d calls, want %d", n, format, len(names), len(turn.ToolCalls))
	}
	for i, c := range turn.ToolCalls {
		var in string
		if inputs[i] != nil {
			in = inputs[i].String()
		}
		if names[i] != c.Name || in != scriptedInput(t, c) {
			t.Fatalf("turn %d: %s call %d is %s(%s), want %s(%s)", n, format, i+1, names[i], in, c.Name, scriptedInput(t, c))
		}
	}
}
