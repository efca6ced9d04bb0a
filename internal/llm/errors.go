package llm

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels classify model-call failures; callers use errors.Is.
var (
	// ErrRateLimited: the server answered 429.
	ErrRateLimited = errors.New("rate limited")
	// ErrServer: the server answered 5xx (or 529 overloaded).
	ErrServer = errors.New("server error")
	// ErrConnection: the connection failed or was cut.
	ErrConnection = errors.New("connection failed")
	// ErrStalled: the stream produced nothing for longer than allowed.
	ErrStalled = errors.New("stream stalled")
	// ErrBadResponse: the server sent something that is not the protocol
	// (malformed SSE or JSON, an unknown event).
	ErrBadResponse = errors.New("malformed response")
	// ErrNoResponse: the stream ended without a final response.
	ErrNoResponse = errors.New("stream ended without a response")
	// ErrAuth: the server rejected the credentials (401/403).
	ErrAuth = errors.New("authentication failed")
	// ErrInvalidRequest: the server rejected the request (other 4xx).
	ErrInvalidRequest = errors.New("invalid request")
)

// APIError is an HTTP error answer from a model server. It unwraps to the
// sentinel matching its status.
type APIError struct {
	Provider   string
	StatusCode int
	// RetryAfter is the server's Retry-After, zero when absent.
	RetryAfter time.Duration
	// NoRetry is the server's "x-should-retry: false", which the official
	// SDKs honour: the error is not retried whatever its status.
	NoRetry bool
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.StatusCode, e.Message)
}

func (e *APIError) Unwrap() error {
	switch {
	case e.StatusCode == 429:
		return ErrRateLimited
	case e.StatusCode == 401 || e.StatusCode == 403:
		return ErrAuth
	case e.StatusCode >= 500:
		return ErrServer
	default:
		return ErrInvalidRequest
	}
}

// Retryable reports whether err is worth another attempt: rate limits,
// server errors, connection failures, stalls and garbled streams.
// A server that says not to retry (APIError.NoRetry) is not retried.
func Retryable(err error) bool {
	if ae, ok := errors.AsType[*APIError](err); ok && ae.NoRetry {
		return false
	}
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrServer) ||
		errors.Is(err, ErrConnection) || errors.Is(err, ErrStalled) ||
		errors.Is(err, ErrBadResponse)
}

// RetryError is returned when every attempt failed; it unwraps to the last
// attempt's error.
type RetryError struct {
	Attempts int
	Last     error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("model call failed after %d attempts: %v", e.Attempts, e.Last)
}

func (e *RetryError) Unwrap() error { return e.Last }
