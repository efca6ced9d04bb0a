package anthropic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arbor-run/arbor/internal/llm"
)

// streamError maps an error of the SDK's stream to llm's error classes.
// ctx is checked first: a cancelled call reports ctx.Err(), not the broken
// read it caused.
func (p *Provider) streamError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return p.apiError(apiErr)
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, bufio.ErrTooLong) {
		return p.badResponse(err)
	}
	return fmt.Errorf("%s: streaming messages: %w: %w", p.name, llm.ErrConnection, err)
}

// apiError converts the SDK's error answer. An error event inside a stream
// arrives with the stream's 200 status; its type then says what happened.
func (p *Provider) apiError(e *sdk.Error) *llm.APIError {
	status := e.StatusCode
	if status < 400 {
		status = statusOfType(e.Type())
	}
	msg := e.Message
	if msg == "" {
		msg = e.RawJSON()
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	var retryAfter time.Duration
	noRetry := false
	if e.Response != nil {
		retryAfter = llm.ParseRetryAfter(e.Response.Header, time.Now())
		noRetry = llm.NoRetry(e.Response.Header)
	}
	return &llm.APIError{Provider: p.name, StatusCode: status, RetryAfter: retryAfter, NoRetry: noRetry, Message: msg}
}

// statusOfType is the HTTP status the API uses for an error type.
func statusOfType(t sdk.ErrorType) int {
	switch t {
	case sdk.ErrorTypeInvalidRequestError:
		return http.StatusBadRequest
	case sdk.ErrorTypeAuthenticationError:
		return http.StatusUnauthorized
	case sdk.ErrorTypeBillingError:
		return http.StatusPaymentRequired
	case sdk.ErrorTypePermissionError:
		return http.StatusForbidden
	case sdk.ErrorTypeNotFoundError:
		return http.StatusNotFound
	case sdk.ErrorTypeRateLimitError:
		return http.StatusTooManyRequests
	case sdk.ErrorTypeTimeoutError:
		return http.StatusGatewayTimeout
	case sdk.ErrorTypeOverloadedError:
		return 529
	default:
		return http.StatusInternalServerError
	}
}

func (p *Provider) badResponse(err error) error {
	return fmt.Errorf("%s: decoding stream: %w: %w", p.name, llm.ErrBadResponse, err)
}

func (p *Provider) cut() error {
	return fmt.Errorf("%s: stream ended before message_stop: %w", p.name, llm.ErrConnection)
}

func (p *Provider) requestError(err error) error {
	return fmt.Errorf("%s: building request: %w: %w", p.name, llm.ErrInvalidRequest, err)
}
