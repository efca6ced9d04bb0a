package llmtest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestOpenAIStream(t *testing.T) {
	t.Parallel()

	t.Run("parallel tool calls reasoning and usage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{
			Thinking: "Two files to read at once.",
			Text:     "Reading both files now.",
			ToolCalls: []llmtest.ToolCall{
				{Name: "read_file", Input: map[string]any{"path": "a.txt"}},
				{ID: "call_fixed", Name: "read_file", Input: map[string]any{"path": "b/ß.txt"}},
				{Name: "list_directory"},
			},
			Usage: llmtest.Usage{Input: 100, Output: 20, CacheRead: 50},
		})
		r := oaStream(ctxT(t), t, b.oa, oaParams("read a and b"))
		must(t, r.err)

		msg := r.acc.Choices[0].Message
		equal(t, "content", msg.Content, "Reading both files now.")
		equal(t, "reasoning", r.reasoning, "Two files to read at once.")
		if r.contentDeltas < 2 || r.reasoningDeltas < 2 {
			t.Fatalf("want several content and reasoning deltas, got %d and %d", r.contentDeltas, r.reasoningDeltas)
		}
		equal(t, "tool calls", len(msg.ToolCalls), 3)
		tc := msg.ToolCalls
		if !strings.HasPrefix(tc[0].ID, "call_") || tc[0].ID == tc[2].ID {
			t.Fatalf("generated ids %q, %q must be distinct and start with call_", tc[0].ID, tc[2].ID)
		}
		equal(t, "call 2 id", tc[1].ID, "call_fixed")
		equal(t, "names", []string{tc[0].Function.Name, tc[1].Function.Name, tc[2].Function.Name}, []string{"read_file", "read_file", "list_directory"})
		jsonEqual(t, "call 1 args", []byte(tc[0].Function.Arguments), `{"path":"a.txt"}`)
		jsonEqual(t, "call 2 args", []byte(tc[1].Function.Arguments), `{"path":"b/ß.txt"}`)
		jsonEqual(t, "call 3 args", []byte(tc[2].Function.Arguments), `{}`)
		// Interleaved: the calls' chunks alternate rather than run one
		// call after another.
		if slices.IsSorted(r.toolChunks) {
			t.Fatalf("tool call chunks are not interleaved: %v", r.toolChunks)
		}
		for i := range 3 {
			if n := count(r.toolChunks, int64(i)); n < 3 {
				t.Fatalf("call %d has %d chunks, want a header and >= 2 argument fragments", i, n)
			}
		}
		equal(t, "finish reason", r.acc.Choices[0].FinishReason, "tool_calls")
		equal(t, "usage chunks", r.usageChunks, 1)
		u := r.acc.Usage
		equal(t, "usage", [4]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.PromptTokensDetails.CachedTokens}, [4]int64{150, 20, 170, 50})
		if !strings.HasPrefix(r.acc.ID, "chatcmpl-") {
			t.Fatalf("id %q does not start with chatcmpl-", r.acc.ID)
		}
		equal(t, "model", r.acc.Model, "gpt-test")
	})

	t.Run("no usage chunk unless asked", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "plain answer here"})
		p := oaParams("hi")
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
		r := oaStream(ctxT(t), t, b.oa, p)
		must(t, r.err)
		equal(t, "content", r.acc.Choices[0].Message.Content, "plain answer here")
		equal(t, "finish reason", r.acc.Choices[0].FinishReason, "stop")
		equal(t, "usage chunks", r.usageChunks, 0)
		equal(t, "recorded include_usage", b.srv.Requests()[0].IncludeUsage, false)
	})

	t.Run("max_tokens becomes length", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "truncated", StopReason: "max_tokens"})
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		must(t, r.err)
		equal(t, "finish reason", r.acc.Choices[0].FinishReason, "length")
	})
}

func TestOpenAINonStreaming(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.Turn{
		Thinking:  "short thought",
		ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "shell", Input: map[string]any{"command": "ls"}}},
		Usage:     llmtest.Usage{Input: 10, Output: 5, CacheRead: 2},
	})
	c, err := b.oa.Chat.Completions.New(ctxT(t), oaParams("go"))
	must(t, err)
	msg := c.Choices[0].Message
	equal(t, "content", msg.Content, "")
	equal(t, "tool calls", len(msg.ToolCalls), 1)
	equal(t, "tool call", [3]string{msg.ToolCalls[0].ID, msg.ToolCalls[0].Function.Name, msg.ToolCalls[0].Function.Arguments}, [3]string{"call_1", "shell", `{"command":"ls"}`})
	equal(t, "reasoning_content", msg.JSON.ExtraFields["reasoning_content"].Raw(), `"short thought"`)
	equal(t, "finish reason", c.Choices[0].FinishReason, "tool_calls")
	equal(t, "usage", [3]int64{c.Usage.PromptTokens, c.Usage.CompletionTokens, c.Usage.PromptTokensDetails.CachedTokens}, [3]int64{12, 5, 2})
}

func count(s []int64, v int64) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
