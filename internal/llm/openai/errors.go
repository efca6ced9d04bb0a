package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/arbor-run/arbor/internal/llm"
)

// streamError maps an error of the SDK's stream to llm's error classes.
// ctx is checked first: a cancelled call reports ctx.Err(), not the broken
// read it caused. resp is the HTTP response, when there was one.
func (p *Provider) streamError(ctx context.Context, err error, resp *http.Response) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = apiErr.RawJSON()
		}
		if msg == "" && apiErr.Response != nil {
			// Not OpenAI's error JSON (a proxy's page, say); the SDK
			// left the body readable.
			msg = bodySnippet(apiErr.Response)
		}
		return p.apiError(apiErr.StatusCode, apiErr.Response, msg)
	}
	// An error answer the SDK could not decode into its error type still
	// has a status that says what it is.
	if resp != nil && resp.StatusCode >= 400 {
		return p.apiError(resp.StatusCode, resp, bodySnippet(resp))
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		return p.inBandError(streamErr)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, bufio.ErrTooLong) {
		return p.badResponse(err)
	}
	return fmt.Errorf("%s: streaming chat completion: %w: %w", p.name, llm.ErrConnection, err)
}

func (p *Provider) apiError(status int, resp *http.Response, msg string) *llm.APIError {
	if msg == "" {
		msg = http.StatusText(status)
	}
	var retryAfter time.Duration
	noRetry := false
	if resp != nil {
		retryAfter = llm.ParseRetryAfter(resp.Header, time.Now())
		noRetry = llm.NoRetry(resp.Header)
	}
	return &llm.APIError{Provider: p.name, StatusCode: status, RetryAfter: retryAfter, NoRetry: noRetry, Message: msg}
}

// inBandError converts an error object sent inside a 200 stream. Servers
// that proxy other providers (OpenRouter) put the upstream HTTP status in
// code; otherwise the error's type or code names it.
func (p *Provider) inBandError(e *ssestream.StreamError) *llm.APIError {
	var body struct {
		Error struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		} `json:"error"`
	}
	status := http.StatusInternalServerError
	msg := e.Message
	if json.Unmarshal(e.Event.Data, &body) == nil {
		if body.Error.Message != "" {
			msg = body.Error.Message
		}
		var code string
		_ = json.Unmarshal(body.Error.Code, &code)
		n, numErr := strconv.Atoi(strings.TrimSpace(string(body.Error.Code)))
		switch {
		case numErr == nil && n >= 400 && n <= 599:
			status = n
		case strings.Contains(body.Error.Type, "rate_limit") || strings.Contains(code, "rate_limit"):
			status = http.StatusTooManyRequests
		case body.Error.Type == "invalid_request_error":
			status = http.StatusBadRequest
		}
	}
	return &llm.APIError{Provider: p.name, StatusCode: status, Message: msg}
}

// bodySnippet returns the start of an error answer's body for the message.
func bodySnippet(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return string(bytes.TrimSpace(b))
}

func (p *Provider) badResponse(err error) error {
	return fmt.Errorf("%s: decoding stream: %w: %w", p.name, llm.ErrBadResponse, err)
}

func (p *Provider) cut() error {
	return fmt.Errorf("%s: stream ended before a finish_reason: %w", p.name, llm.ErrConnection)
}

func (p *Provider) requestError(err error) error {
	return fmt.Errorf("%s: building request: %w: %w", p.name, llm.ErrInvalidRequest, err)
}
