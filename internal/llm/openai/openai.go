// Package openai is arbor's llm.Provider for the Chat Completions API,
// streamed through the official Go SDK. Besides api.openai.com it serves any
// compatible server (Ollama, vLLM, DashScope, OpenRouter, DeepSeek…).
//
// Invariants:
//   - The SDK never retries (llm.WithRetry owns retries); the base URL and
//     key are the caller's, never the environment's.
//   - Every stream ends with exactly one llm.Done or one error. Errors are a
//     *llm.APIError for HTTP error answers (also for errors sent in-band
//     inside a stream) or wrap llm.ErrConnection (transport failures, a
//     stream cut before its finish_reason) or llm.ErrBadResponse
//     (undecodable chunks); a cancelled ctx yields ctx.Err().
//   - Usage.InputTokens excludes cached and cache-write tokens (OpenAI's
//     prompt_tokens includes them), so llm.Price.Cost counts each token once.
//   - reasoning_content (or reasoning) deltas, as DeepSeek, Qwen and vLLM
//     send them, become thinking; thinking is never sent back.
//   - Chat Completions has no is_error: a failed tool result is sent with an
//     "Error: " prefix so the model can still tell.
//   - ThinkingBudget is not sent: Chat Completions has no budget, and
//     reasoning models reason without being asked.
//   - The request body is encoded by arbor (body.go) and sent through the
//     SDK whole; it is, as a JSON value, what the SDK's params would encode
//     (TestBodyMatchesTheSDK). The SDK's SSE decoder splits the answer into
//     chunks, which decode into arbor's plain structs and read what the
//     SDK's ChatCompletionChunk reads (TestChunkMatchesTheSDK).
package openai

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/arbor-run/arbor/internal/llm"
)

// DefaultMaxTokens is the output cap used when neither the request nor the
// options set one.
const DefaultMaxTokens = 8192

// defaultBaseURL is the SDK's production endpoint, set explicitly so that
// OPENAI_BASE_URL in the environment cannot redirect a provider configured
// without a base URL.
const defaultBaseURL = "https://api.openai.com/v1"

// Options configure a Provider.
type Options struct {
	// Name is the provider's name in errors and logs; default "openai".
	Name   string
	APIKey string
	// BaseURL includes the API's version path, as compatible servers
	// document it ("http://127.0.0.1:11434/v1"); "/v1" is appended when the
	// URL has no path at all. Empty means api.openai.com.
	BaseURL string
	// HTTPClient sends the requests; default llm.NewHTTPClient(), without a
	// timeout (streams are bounded by ctx and the stall watchdog of
	// llm.WithRetry).
	HTTPClient *http.Client
	// MaxTokens caps the output of requests that set none; default
	// DefaultMaxTokens.
	MaxTokens int64
}

// Provider streams model calls from the Chat Completions API.
type Provider struct {
	name      string
	maxTokens int64
	// official is true for api.openai.com, whose reasoning models reject
	// max_tokens and need max_completion_tokens; compatible servers do not
	// all know the latter.
	official bool
	// post is the SDK client's Post; only the method is kept, as in the
	// anthropic package.
	post  func(ctx context.Context, path string, params, res any, opts ...option.RequestOption) error
	heads headCache // the start of the last body (body.go)
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider configured by o.
func New(o Options) *Provider {
	if o.Name == "" {
		o.Name = "openai"
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.HTTPClient == nil {
		o.HTTPClient = llm.NewHTTPClient()
	}
	base := resolveBaseURL(o.BaseURL)
	client := sdk.NewClient(
		option.WithBaseURL(base),
		option.WithAPIKey(o.APIKey), // also when empty: no key from the environment
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	)
	return &Provider{
		name:      o.Name,
		maxTokens: o.MaxTokens,
		official:  isOfficial(base),
		post:      client.Post,
	}
}

// resolveBaseURL applies the defaults: api.openai.com when empty, /v1 when
// the URL has no path.
func resolveBaseURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return defaultBaseURL
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s // the SDK reports the bad URL on the first call
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1"
	}
	return u.String()
}

func isOfficial(base string) bool {
	u, err := url.Parse(base)
	return err == nil && u.Hostname() == "api.openai.com"
}

// Name returns the provider's configured name.
func (p *Provider) Name() string { return p.name }

// OpenAI's limits on one request: at most MaxTools tools (more is refused
// with 400 "Invalid 'tools': array too long. Expected an array with
// maximum length 128, …") and MaxImages images. Compatible servers are
// taken to have the same.
const (
	MaxTools  = 128
	MaxImages = 500
)

// Limits are OpenAI's limits on one request.
func (p *Provider) Limits() llm.Limits { return llm.Limits{MaxTools: MaxTools, MaxImages: MaxImages} }

// Stream sends req and yields the response as it arrives.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		// A conversation past MaxImages sends its newest images only.
		body, err := requestBody(llm.CapImages(req, MaxImages), p.maxTokens, p.official, &p.heads)
		if err != nil {
			yield(nil, p.requestError(err))
			return
		}
		// The SDK's client sends the body (body.go) with its headers and
		// turns error answers into *sdk.Error; its SSE decoder splits the
		// stream into chunks, ends it at [DONE] and turns in-band errors
		// into *ssestream.StreamError. The chunks decode into arbor's plain
		// structs (stream.go), not the SDK's. Chat.Completions.NewStreaming
		// would also rewrite the whole body to set "stream", which it has.
		var httpResp *http.Response
		err = p.post(ctx, "chat/completions", nil, &httpResp, option.WithRequestBody("application/json", body))
		stream := ssestream.NewStream[chunk](ssestream.NewDecoder(httpResp), err)
		defer stream.Close()

		asm := newAssembler()
		for stream.Next() {
			c := stream.Current()
			events, err := asm.add(&c)
			if err != nil {
				yield(nil, p.badResponse(err))
				return
			}
			for _, ev := range events {
				if !yield(ev, nil) {
					return
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, p.streamError(ctx, err, httpResp))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if !asm.finished {
			yield(nil, p.cut())
			return
		}
		resp, err := asm.response()
		if err != nil {
			yield(nil, p.badResponse(err))
			return
		}
		yield(llm.Done{Response: resp}, nil)
	}
}
