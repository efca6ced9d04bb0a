package providertest

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

var readFileSpec = llm.ToolSpec{
	Name:        "read_file",
	Description: "Read a file from the workspace.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"file path"}},"required":["path"],"additionalProperties":false}`),
}

var listDirSpec = llm.ToolSpec{
	Name:        "list_directory",
	Description: "List a directory.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"},"depth":{"type":"integer","minimum":1}}}`),
}

func (s *suite) testTools(t *testing.T) {
	t.Parallel()

	t.Run("SingleCall", func(t *testing.T) {
		t.Parallel()
		input := `{"path":"docs/a.txt","lines":{"from":1,"to":20}}`
		b := s.setup(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_one", Name: "read_file", Input: input}}})
		req := request("read docs/a.txt")
		req.Tools = []llm.ToolSpec{readFileSpec}
		r := mustSucceed(t, b.p.Stream(context.Background(), req))

		calls := streamedCalls(t, r.events)
		if len(calls) != 1 || calls[0].id != "call_one" || calls[0].name != "read_file" || !calls[0].ended {
			t.Fatalf("streamed calls = %+v, want one ended read_file call_one", calls)
		}
		requireJSONEqual(t, "streamed input", []byte(calls[0].json.String()), []byte(input))
		got := r.resp.Message.ToolCalls()
		if len(got) != 1 || got[0].ID != "call_one" || got[0].Name != "read_file" {
			t.Fatalf("response tool calls = %+v", got)
		}
		requireJSONEqual(t, "response input", got[0].Input, []byte(input))
		if r.resp.StopReason != llm.StopToolUse {
			t.Fatalf("stop reason = %q, want tool_use", r.resp.StopReason)
		}
	})

	t.Run("EmptyInput", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_e", Name: "list_directory"}}})
		req := request("list")
		req.Tools = []llm.ToolSpec{listDirSpec}
		r := mustSucceed(t, b.p.Stream(context.Background(), req))
		got := r.resp.Message.ToolCalls()
		if len(got) != 1 {
			t.Fatalf("tool calls = %+v", got)
		}
		requireJSONEqual(t, "input", got[0].Input, []byte(`{}`))
	})

	t.Run("ParallelCalls", func(t *testing.T) {
		t.Parallel()
		want := []llmtest.ToolCall{
			{ID: "call_a", Name: "read_file", Input: `{"path":"a.txt"}`},
			{ID: "call_b", Name: "list_directory", Input: `{"dir":"src","depth":2}`},
			{ID: "call_c", Name: "read_file", Input: `{"path":"c/ü.md"}`},
		}
		b := s.setup(t, llmtest.Turn{Text: "Looking at three things.", ToolCalls: want})
		req := request("look around")
		req.Tools = []llm.ToolSpec{readFileSpec, listDirSpec}
		r := mustSucceed(t, b.p.Stream(context.Background(), req))

		calls := streamedCalls(t, r.events)
		got := r.resp.Message.ToolCalls()
		if len(calls) != len(want) || len(got) != len(want) {
			t.Fatalf("streamed %d and returned %d calls, want %d", len(calls), len(got), len(want))
		}
		for i, w := range want {
			c := calls[i]
			if c.id != w.ID || c.name != w.Name || !c.ended {
				t.Fatalf("streamed call %d = %s %s ended=%v, want %s %s", i, c.id, c.name, c.ended, w.ID, w.Name)
			}
			requireJSONEqual(t, "streamed input", []byte(c.json.String()), []byte(w.Input.(string)))
			if got[i].ID != w.ID || got[i].Name != w.Name {
				t.Fatalf("response call %d = %+v, want %s %s", i, got[i], w.ID, w.Name)
			}
			requireJSONEqual(t, "response input", got[i].Input, []byte(w.Input.(string)))
		}
		parts := r.resp.Message.Parts
		if parts[0].Type != llm.PartText || parts[0].Text != "Looking at three things." {
			t.Fatalf("first part = %+v, want the text before the calls", parts[0])
		}
	})

	t.Run("RoundTrip", s.testRoundTrip)
}

// testRoundTrip sends a conversation holding tool calls and their results
// and checks what the server decoded from the wire.
func (s *suite) testRoundTrip(t *testing.T) {
	t.Parallel()
	const thought = "Both files are needed."
	b := s.setup(t, llmtest.Turn{Text: "a.txt says hello; b.txt is missing.", Expect: "hello"})
	req := &llm.Request{
		Model:          Model,
		System:         "You are terse.",
		MaxTokens:      3000,
		ThinkingBudget: 1024,
		Tools:          []llm.ToolSpec{readFileSpec, listDirSpec},
		Messages: []llm.Message{
			llm.UserText("Read a.txt and b.txt."),
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				{Type: llm.PartThinking, Text: thought, Signature: llmtest.ThinkingSignature(thought)},
				llm.TextPart("Reading both."),
				{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "call_1", Name: "read_file", Input: json.RawMessage(`{"path":"a.txt"}`)}},
				{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "call_2", Name: "read_file", Input: json.RawMessage(`{"path":"b.txt"}`)}},
			}},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "call_1", Content: "hello"}},
				{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "call_2", Content: "no such file", IsError: true}},
			}},
		},
	}
	r := mustSucceed(t, b.p.Stream(context.Background(), req))
	if r.resp.Message.Text() != "a.txt says hello; b.txt is missing." {
		t.Fatalf("text = %q", r.resp.Message.Text())
	}

	rec := b.onlyRequest(t)
	if rec.System != "You are terse." || rec.MaxTokens != 3000 || rec.Model != Model {
		t.Fatalf("request system %q max_tokens %d model %q", rec.System, rec.MaxTokens, rec.Model)
	}
	if len(rec.Tools) != 2 {
		t.Fatalf("request tools = %+v", rec.Tools)
	}
	for i, want := range req.Tools {
		got := rec.Tools[i]
		if got.Name != want.Name || got.Description != want.Description {
			t.Fatalf("tool %d = %s %q, want %s %q", i, got.Name, got.Description, want.Name, want.Description)
		}
		requireJSONEqual(t, want.Name+" schema", got.InputSchema, want.InputSchema)
	}
	if len(rec.Messages) != 3 {
		t.Fatalf("request has %d messages, want 3: %+v", len(rec.Messages), rec.Messages)
	}
	checkAssistant(t, rec, rec.Messages[1], thought)
	checkResults(t, rec, rec.Messages[2])
}

func checkAssistant(t *testing.T, rec llmtest.Request, m llm.Message, thought string) {
	t.Helper()
	if m.Role != llm.RoleAssistant || m.Text() != "Reading both." {
		t.Fatalf("assistant message = %+v", m)
	}
	var thinking []llm.Part
	for _, p := range m.Parts {
		if p.Type == llm.PartThinking {
			thinking = append(thinking, p)
		}
	}
	switch rec.Format {
	case llmtest.FormatAnthropic:
		// Thinking blocks go back unchanged, signature included.
		if len(thinking) != 1 || thinking[0].Text != thought || thinking[0].Signature != llmtest.ThinkingSignature(thought) {
			t.Fatalf("thinking sent back = %+v, want the original block", thinking)
		}
		if rec.ThinkingBudget != 1024 {
			t.Fatalf("thinking budget = %d, want 1024", rec.ThinkingBudget)
		}
	case llmtest.FormatOpenAI:
		if len(thinking) != 0 {
			t.Fatalf("thinking sent back = %+v, want none", thinking)
		}
	}
	calls := m.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "call_1" || calls[1].ID != "call_2" || calls[0].Name != "read_file" {
		t.Fatalf("assistant tool calls = %+v", calls)
	}
	requireJSONEqual(t, "call_1 input", calls[0].Input, []byte(`{"path":"a.txt"}`))
	requireJSONEqual(t, "call_2 input", calls[1].Input, []byte(`{"path":"b.txt"}`))
}

func checkResults(t *testing.T, rec llmtest.Request, m llm.Message) {
	t.Helper()
	if m.Role != llm.RoleUser || len(m.Parts) != 2 {
		t.Fatalf("tool results message = %+v", m)
	}
	var res []llm.ToolResult
	for _, p := range m.Parts {
		if p.Type != llm.PartToolResult || p.ToolResult == nil {
			t.Fatalf("part %+v is not a tool result", p)
		}
		res = append(res, *p.ToolResult)
	}
	if !reflect.DeepEqual(res[0], llm.ToolResult{CallID: "call_1", Content: "hello"}) {
		t.Fatalf("first result = %+v", res[0])
	}
	want := llm.ToolResult{CallID: "call_2", Content: "no such file", IsError: true}
	if rec.Format == llmtest.FormatOpenAI {
		// Chat Completions has no is_error; the provider says it in words.
		want = llm.ToolResult{CallID: "call_2", Content: "Error: no such file"}
	}
	if !reflect.DeepEqual(res[1], want) {
		t.Fatalf("second result = %+v, want %+v", res[1], want)
	}
}
