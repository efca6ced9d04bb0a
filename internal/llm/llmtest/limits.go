package llmtest

import (
	"fmt"

	"github.com/arbor-run/arbor/internal/llm"
)

// The providers' limits on one request that the server enforces as the
// real APIs do, with their answers (HTTP 400 and the error body each
// sends), so that tests prove a client stays under them.
const (
	// OpenAIMaxTools is how many tools OpenAI's APIs take in a request:
	// "Invalid 'tools': array too long. Expected an array with maximum
	// length 128, but got an array with length 130 instead."
	OpenAIMaxTools = 128
	// AnthropicMaxImages is how many images the Messages API takes in a
	// request (for models with a 200k-token window; 600 for others):
	// "Too much media: 0 document pages + 103 images > 100".
	AnthropicMaxImages = 100
)

// refusal is the error a real API answers req with because it passes one
// of those limits, "" when it does not.
func refusal(req Request) (msg, param, code string) {
	switch req.Format {
	case FormatOpenAI:
		if n := len(req.Tools); n > OpenAIMaxTools {
			return fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", OpenAIMaxTools, n),
				"tools", "array_above_max_length"
		}
	case FormatAnthropic:
		if n := Images(req.Messages); n > AnthropicMaxImages {
			return fmt.Sprintf("Too much media: 0 document pages + %d images > %d", n, AnthropicMaxImages), "", ""
		}
	}
	return "", "", ""
}

// Images counts the images of msgs: a user's and those of tool results.
func Images(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch {
			case p.Type == llm.PartImage:
				n++
			case p.Type == llm.PartToolResult && p.ToolResult != nil:
				n += len(p.ToolResult.Images)
			}
		}
	}
	return n
}
