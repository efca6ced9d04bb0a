package llmtest_test

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestAnthropicStream(t *testing.T) {
	t.Parallel()

	t.Run("text thinking tool calls and usage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{
			Thinking: "The user wants a file read, then a note.",
			Text:     "Let me look at that file for you.",
			ToolCalls: []llmtest.ToolCall{
				{Name: "read_file", Input: map[string]any{"path": "notes/ünïcode.txt", "limit": 10}},
				{ID: "toolu_fixed", Name: "glob", Input: `{"pattern": "**/*.go"}`},
			},
			Usage: llmtest.Usage{Input: 120, Output: 45, CacheRead: 1000, CacheWrite: 30},
		})
		r := antStream(ctxT(t), t, b.ant, antParams("read it"))
		must(t, r.err)

		equal(t, "block types", r.blockTypes, []string{"thinking", "text", "tool_use", "tool_use"})
		c := r.msg.Content
		equal(t, "thinking", c[0].Thinking, "The user wants a file read, then a note.")
		equal(t, "signature", c[0].Signature, llmtest.ThinkingSignature("The user wants a file read, then a note."))
		equal(t, "text", c[1].Text, "Let me look at that file for you.")
		equal(t, "call 1 name", c[2].Name, "read_file")
		jsonEqual(t, "call 1 input", c[2].Input, `{"path":"notes/ünïcode.txt","limit":10}`)
		if len(c[2].ID) < len("toolu_x") || c[2].ID[:6] != "toolu_" {
			t.Fatalf("generated tool id %q does not start with toolu_", c[2].ID)
		}
		equal(t, "call 2 id", c[3].ID, "toolu_fixed")
		jsonEqual(t, "call 2 input", c[3].Input, `{"pattern":"**/*.go"}`)

		if r.deltas["text_delta"] < 2 || r.deltas["thinking_delta"] < 2 || r.deltas["input_json_delta"] < 4 {
			t.Fatalf("want several deltas per block, got %v", r.deltas)
		}
		equal(t, "signature deltas", r.deltas["signature_delta"], 1)
		equal(t, "stop reason", r.msg.StopReason, anthropic.StopReasonToolUse)
		u := r.msg.Usage
		equal(t, "usage", [4]int64{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens}, [4]int64{120, 45, 1000, 30})
		if r.msg.ID[:4] != "msg_" {
			t.Fatalf("message id %q does not start with msg_", r.msg.ID)
		}
		equal(t, "model", string(r.msg.Model), "claude-test")
	})

	t.Run("defaults: end_turn and derived usage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "Hello there, friend."})
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		must(t, r.err)
		equal(t, "text", r.msg.Content[0].Text, "Hello there, friend.")
		equal(t, "stop reason", r.msg.StopReason, anthropic.StopReasonEndTurn)
		if r.msg.Usage.InputTokens == 0 || r.msg.Usage.OutputTokens == 0 {
			t.Fatalf("derived usage must be nonzero, got %+v", r.msg.Usage)
		}
	})

	t.Run("max_tokens stop reason", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "cut short", StopReason: "max_tokens"})
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		must(t, r.err)
		equal(t, "stop reason", r.msg.StopReason, anthropic.StopReasonMaxTokens)
	})
}

func TestAnthropicNonStreaming(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.Turn{
		Thinking:  "hmm",
		Text:      "Calling a tool.",
		ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "ls"}}},
		Usage:     llmtest.Usage{Input: 7, Output: 9, CacheRead: 3},
	})
	msg, err := b.ant.Messages.New(ctxT(t), antParams("go"))
	must(t, err)
	equal(t, "blocks", len(msg.Content), 3)
	equal(t, "thinking", msg.Content[0].Thinking, "hmm")
	equal(t, "signature", msg.Content[0].Signature, llmtest.ThinkingSignature("hmm"))
	equal(t, "text", msg.Content[1].Text, "Calling a tool.")
	equal(t, "tool", msg.Content[2].Name, "shell")
	jsonEqual(t, "input", msg.Content[2].Input, `{"command":"ls"}`)
	equal(t, "stop", msg.StopReason, anthropic.StopReasonToolUse)
	equal(t, "usage", [3]int64{msg.Usage.InputTokens, msg.Usage.OutputTokens, msg.Usage.CacheReadInputTokens}, [3]int64{7, 9, 3})
	equal(t, "recorded stream flag", b.srv.Requests()[0].Stream, false)
}

// A non-streaming message cannot carry arguments that are not JSON: the
// request is answered with an error saying so (it used to panic in the
// handler, found by FuzzScript). A stream carries them.
func TestAnthropicRawInputNotJSON(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", RawInput: `{"command":`}}}
	b := setup(t, turn, turn)
	_, err := b.ant.Messages.New(ctxT(t), antParams("go"), antoption.WithMaxRetries(0))
	if err == nil || !strings.Contains(err.Error(), "raw_input") {
		t.Fatalf("non-streaming: %v, want an error about raw_input", err)
	}
	stream := b.ant.Messages.NewStreaming(ctxT(t), antParams("go"))
	var partial string
	for stream.Next() {
		if d := stream.Current().Delta; d.Type == "input_json_delta" {
			partial += d.PartialJSON
		}
	}
	equal(t, "streamed arguments", partial, `{"command":`)
}

func TestModelsEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)

	page, err := b.ant.Models.List(ctxT(t), anthropic.ModelListParams{})
	must(t, err)
	equal(t, "anthropic models", len(page.Data), 1)
	equal(t, "anthropic model id", page.Data[0].ID, llmtest.ModelID)

	oaPage, err := b.oa.Models.List(ctxT(t))
	must(t, err)
	equal(t, "openai models", len(oaPage.Data), 1)
	equal(t, "openai model id", oaPage.Data[0].ID, llmtest.ModelID)
	equal(t, "models are not recorded", len(b.srv.Requests()), 0)
}
