// Package llmtest is arbor's scripted model server: a real HTTP + SSE server
// that impersonates both the Anthropic Messages API (POST /v1/messages) and
// the OpenAI Chat Completions API (POST /v1/chat/completions), answering each
// request with the next Turn of a script. Every provider, agent and protocol
// test in arbor talks to it through the official SDKs, and `arbor run --model
// script:FILE` uses it for offline demos.
//
// # Using it in tests
//
//	srv := llmtest.NewServer(
//		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Input: map[string]any{"path": "a.txt"}}}},
//		llmtest.Turn{Text: "The file says hello.", Expect: "hello"},
//	)
//	defer srv.Close()
//	// Anthropic SDK: option.WithBaseURL(srv.URL)
//	// OpenAI SDK:    option.WithBaseURL(srv.URL + "/v1")
//
// NewServerFunc answers from a function instead (called once per request, in
// request order, never concurrently); turns added with Push are served before
// the function is asked.
//
// # Using it from a binary
//
//	script, err := llmtest.LoadScript("examples/hello.yaml")
//	srv, err := llmtest.Serve(ctx, "127.0.0.1:0", script)
//	// point either provider at srv.URL; the server stops when ctx ends or on Close.
//
// # Scripts
//
// A script file (YAML or JSON) is {turns: [...]} where each turn has text,
// thinking, tool_calls (name, input, optional id), stop_reason, usage, fault
// and expect; see Turn. A tool call input given as a string holding a JSON
// object is used verbatim.
//
// # Invariants
//
//   - Each model request consumes exactly one turn, atomically, in arrival
//     order; a faulted turn is consumed by the one request it answers, so
//     [{fault: rate_limit}, {text: hi}] is "429, then success".
//   - When the script is exhausted the server answers HTTP 500 with
//     "llmtest: script exhausted after N requests" and
//     "x-should-retry: false": a client that honours it does not retry.
//   - Text and thinking are streamed in several deltas (one per word), tool
//     inputs in at least two JSON fragments; concatenated, they are exactly
//     the scripted values.
//   - Usage: Input and Output default to estimates from the request body and
//     the answer (never zero). OpenAI's prompt_tokens counts all input
//     (Input + CacheRead + CacheWrite), with CacheRead reported as
//     prompt_tokens_details.cached_tokens, as OpenAI does.
//   - Stalls end when the client disconnects or the server closes; Close never
//     waits on a stalled or slow handler.
//   - Like the real APIs, it answers 400 to an OpenAI request with more
//     than 128 tools and to an Anthropic one with more than 100 images,
//     with their error bodies, and takes no turn for it (limits.go).
//   - Requests() records every model request (decodable or not) in arrival
//     order, including ones answered with faults or errors; GET /v1/models is
//     not recorded.
package llmtest
