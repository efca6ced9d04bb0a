package llmtest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestProviderLimits: the server refuses what the real APIs refuse, with
// their status and error body, and takes no turn for it: OpenAI more than
// 128 tools, Anthropic more than 100 images in a request.
func TestProviderLimits(t *testing.T) {
	t.Parallel()

	t.Run("openai tools", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "ok"})
		tools := func(n int) []openai.ChatCompletionToolUnionParam {
			var out []openai.ChatCompletionToolUnionParam
			for i := range n {
				out = append(out, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: fmt.Sprintf("t%d", i)}))
			}
			return out
		}
		p := oaParams("hi")
		p.Tools = tools(llmtest.OpenAIMaxTools + 1)
		r := oaStream(ctxT(t), t, b.oa, p)
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) {
			t.Fatalf("want *openai.Error, got %T %v", r.err, r.err)
		}
		equal(t, "status", apiErr.StatusCode, 400)
		equal(t, "type", apiErr.Type, "invalid_request_error")
		equal(t, "param", apiErr.Param, "tools")
		equal(t, "code", apiErr.Code, "array_above_max_length")
		equal(t, "message", apiErr.Message, "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead.")

		p.Tools = tools(llmtest.OpenAIMaxTools)
		r = oaStream(ctxT(t), t, b.oa, p)
		must(t, r.err)
		equal(t, "text", r.acc.Choices[0].Message.Content, "ok")
		equal(t, "requests recorded", len(b.srv.Requests()), 2)
	})

	t.Run("anthropic images", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "ok"})
		images := func(n int) anthropic.MessageNewParams {
			p := antParams("look")
			blocks := []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("look")}
			for range n {
				blocks = append(blocks, anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="))
			}
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)}
			return p
		}
		r := antStream(ctxT(t), t, b.ant, images(llmtest.AnthropicMaxImages+1))
		var apiErr *anthropic.Error
		if !errors.As(r.err, &apiErr) {
			t.Fatalf("want *anthropic.Error, got %T %v", r.err, r.err)
		}
		equal(t, "status", apiErr.StatusCode, 400)
		equal(t, "type", string(apiErr.Type()), "invalid_request_error")
		if !strings.Contains(apiErr.Error(), "Too much media: 0 document pages + 101 images > 100") {
			t.Fatalf("error = %v", apiErr)
		}

		r = antStream(ctxT(t), t, b.ant, images(llmtest.AnthropicMaxImages))
		must(t, r.err)
		equal(t, "text", r.msg.Content[0].Text, "ok")
	})
}
