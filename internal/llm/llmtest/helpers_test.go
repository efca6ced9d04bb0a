package llmtest_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// bundle is one server plus both official SDK clients pointed at it.
type bundle struct {
	srv *llmtest.Server
	ant anthropic.Client
	oa  openai.Client
}

func setup(t *testing.T, turns ...llmtest.Turn) *bundle {
	t.Helper()
	return clients(t, llmtest.NewServer(turns...))
}

func clients(t *testing.T, srv *llmtest.Server) *bundle {
	t.Helper()
	t.Cleanup(srv.Close)
	return &bundle{
		srv: srv,
		ant: anthropic.NewClient(antoption.WithBaseURL(srv.URL), antoption.WithAPIKey("test"), antoption.WithMaxRetries(0)),
		oa:  openai.NewClient(oaoption.WithBaseURL(srv.URL+"/v1"), oaoption.WithAPIKey("test"), oaoption.WithMaxRetries(0)),
	}
}

// antResult is what the Anthropic SDK saw of one streamed response.
type antResult struct {
	msg        anthropic.Message
	events     int
	deltas     map[string]int // delta type → count
	blockTypes []string
	err        error
}

func antParams(user string) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
	}
}

func antStream(ctx context.Context, t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) antResult {
	t.Helper()
	r := antResult{deltas: map[string]int{}}
	stream := c.Messages.NewStreaming(ctx, p)
	defer stream.Close()
	for stream.Next() {
		ev := stream.Current()
		r.events++
		if err := r.msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulating %s event: %v", ev.Type, err)
		}
		switch ev.Type {
		case "content_block_delta":
			r.deltas[ev.Delta.Type]++
		case "content_block_start":
			r.blockTypes = append(r.blockTypes, ev.ContentBlock.Type)
		}
	}
	r.err = stream.Err()
	return r
}

// oaResult is what the OpenAI SDK saw of one streamed response.
type oaResult struct {
	acc             openai.ChatCompletionAccumulator
	chunks          int
	contentDeltas   int
	reasoning       string
	reasoningDeltas int
	toolChunks      []int64 // tool call index of every tool call delta, in order
	usageChunks     int
	err             error
}

func oaParams(user string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "gpt-test",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(user)},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

func oaStream(ctx context.Context, t *testing.T, c openai.Client, p openai.ChatCompletionNewParams) oaResult {
	t.Helper()
	var r oaResult
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	defer stream.Close()
	for stream.Next() {
		chunk := stream.Current()
		r.chunks++
		if !r.acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %d: %s", r.chunks, chunk.RawJSON())
		}
		if len(chunk.Choices) == 0 {
			if chunk.JSON.Usage.Valid() {
				r.usageChunks++
			}
			continue
		}
		d := chunk.Choices[0].Delta
		if d.Content != "" {
			r.contentDeltas++
		}
		if f, ok := d.JSON.ExtraFields["reasoning_content"]; ok {
			var s string
			if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
				t.Fatalf("reasoning_content %s: %v", f.Raw(), err)
			}
			r.reasoning += s
			r.reasoningDeltas++
		}
		for _, tc := range d.ToolCalls {
			r.toolChunks = append(r.toolChunks, tc.Index)
		}
	}
	r.err = stream.Err()
	return r
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got: %#v\nwant: %#v", what, got, want)
	}
}

func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: not JSON: %s", what, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want JSON %s", what, want)
	}
	equal(t, what, g, w)
}
