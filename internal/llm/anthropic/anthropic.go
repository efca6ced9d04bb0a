// Package anthropic is arbor's llm.Provider for Anthropic's Messages API,
// streamed through the official Go SDK. It works with api.anthropic.com and
// with any server speaking the same wire format.
//
// Invariants:
//   - The SDK never retries (llm.WithRetry owns retries) and never reads the
//     environment: the caller resolves keys and base URLs.
//   - Every stream ends with exactly one llm.Done or one error. Errors are a
//     *llm.APIError for HTTP error answers (also for errors sent in-band
//     inside a stream) or wrap llm.ErrConnection (transport failures, a
//     stream cut before message_stop) or llm.ErrBadResponse (undecodable
//     events); a cancelled ctx yields ctx.Err().
//   - Thinking blocks are returned as llm.PartThinking with their signature
//     and sent back unchanged. A redacted thinking block is kept as a
//     thinking part with an empty Text and the opaque data in Signature, so
//     it too round-trips.
//   - The SDK's client sends the request and its SSE decoder splits the
//     answer into events; the events decode into arbor's plain structs,
//     which read what the SDK's union reads (TestEventMatchesTheSDK).
//   - Tool call input is always a JSON object; an empty input becomes {}.
//   - Prompt caching: a cache breakpoint is set at the end of the system
//     prompt (or the tools, when there is no system prompt) and on the last
//     block of the conversation, so each step of an agent loop re-reads the
//     previous step's prefix from the cache.
package anthropic

import (
	"context"
	"iter"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/arbor-run/arbor/internal/llm"
)

// DefaultMaxTokens is the output cap used when neither the request nor the
// options set one.
const DefaultMaxTokens = 8192

// Options configure a Provider.
type Options struct {
	// Name is the provider's name in errors and logs; default "anthropic".
	Name   string
	APIKey string
	// BaseURL is the server's root URL (the SDK appends /v1/messages);
	// empty means the SDK's production default. ANTHROPIC_BASE_URL is
	// resolved by the caller, not here.
	BaseURL string
	// HTTPClient sends the requests; default llm.NewHTTPClient(), without a
	// timeout (streams are bounded by ctx and the stall watchdog of
	// llm.WithRetry).
	HTTPClient *http.Client
	// MaxTokens caps the output of requests that set none; default
	// DefaultMaxTokens.
	MaxTokens int64
}

// Provider streams model calls from the Messages API.
type Provider struct {
	name      string
	maxTokens int64
	// post is the SDK client's Post. Only the method is kept: a Provider
	// holding the whole sdk.Client made the linker keep every method of
	// every service of the SDK (40 MB of binary).
	post  func(ctx context.Context, path string, params, res any, opts ...option.RequestOption) error
	heads headCache // the start of the last body (head.go)
}

var _ llm.Provider = (*Provider)(nil)

// New returns a Provider configured by o.
func New(o Options) *Provider {
	if o.Name == "" {
		o.Name = "anthropic"
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.HTTPClient == nil {
		o.HTTPClient = llm.NewHTTPClient()
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(o.HTTPClient),
		option.WithMaxRetries(0),
	}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	if o.APIKey != "" {
		// The SDK sends the key as a bearer token; Anthropic-compatible
		// servers (and older gateways) read x-api-key, so send both.
		opts = append(opts, option.WithAPIKey(o.APIKey), option.WithHeader("x-api-key", o.APIKey))
	}
	client := sdk.NewClient(opts...)
	return &Provider{name: o.Name, maxTokens: o.MaxTokens, post: client.Post}
}

// Name returns the provider's configured name.
func (p *Provider) Name() string { return p.name }

// MaxImages is the most images the Messages API takes in one request,
// for models with a 200k-token context window (others take 600); more
// is refused with 400 "Too much media: 0 document pages + 101 images >
// 100". It sets no limit on the number of tools.
const MaxImages = 100

// Limits are the Messages API's limits on one request.
func (p *Provider) Limits() llm.Limits { return llm.Limits{MaxImages: MaxImages} }

// Stream sends req and yields the response as it arrives.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		// A conversation past MaxImages sends its newest images only.
		body, err := requestBody(llm.CapImages(req, MaxImages), p.maxTokens, &p.heads)
		if err != nil {
			yield(nil, p.requestError(err))
			return
		}
		// The SDK's client sends the body (body.go) with its headers and
		// turns error answers into *sdk.Error; its SSE decoder splits the
		// stream into events, skips pings and turns error events into
		// *sdk.Error too. The events decode into arbor's plain structs
		// (stream.go), not the SDK's union. Messages.NewStreaming would
		// also rewrite the whole body to set "stream", which it has.
		var raw *http.Response
		err = p.post(ctx, "v1/messages", nil, &raw, option.WithRequestBody("application/json", body))
		stream := ssestream.NewStream[event](ssestream.NewDecoder(raw), err)
		defer stream.Close()

		asm := newAssembler()
		for stream.Next() {
			ev := stream.Current()
			events, err := asm.add(&ev)
			if err != nil {
				yield(nil, p.badResponse(err))
				return
			}
			for _, ev := range events {
				if !yield(ev, nil) {
					return
				}
			}
			if asm.done {
				resp, err := asm.response()
				if err != nil {
					yield(nil, p.badResponse(err))
					return
				}
				yield(llm.Done{Response: resp}, nil)
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, p.streamError(ctx, err))
			return
		}
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		yield(nil, p.cut())
	}
}
