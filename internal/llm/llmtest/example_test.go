package llmtest_test

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// A one-turn script answered through the official OpenAI SDK; Expect makes
// the turn fail loudly if the request is not the one the script expects.
func Example() {
	srv := llmtest.NewServer(llmtest.Turn{Text: "Hello from the script.", Expect: "hi"})
	defer srv.Close()

	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "any",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(resp.Choices[0].Message.Content)
	fmt.Println(len(srv.Requests()), "requests,", srv.Remaining(), "turns left")
	// Output:
	// Hello from the script.
	// 1 requests, 0 turns left
}
