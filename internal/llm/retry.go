package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy says how WithRetry retries a failed model call. The zero value
// is usable: every zero field takes the default named beside it.
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts; default 4.
	MaxAttempts int
	// BaseDelay is the first backoff step; default 1s. Backoff is exponential
	// with full jitter, capped at MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps the backoff; default 30s. A server's Retry-After may
	// exceed it, up to maxRetryAfter.
	MaxDelay time.Duration
	// StallTimeout aborts an attempt that produced no event for this long
	// with ErrStalled; default 60s; a negative value disables it.
	StallTimeout time.Duration
	// Sleep waits d or until ctx is done; default a real timer honouring ctx.
	// Tests inject a fake to avoid real waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told about every retry before its backoff:
	// ctx is the call's, attempt the 1-based number of the attempt that
	// failed, delay the wait before the next one and err the failure.
	OnRetry func(ctx context.Context, attempt int, delay time.Duration, err error)
}

const (
	defaultMaxAttempts  = 4
	defaultBaseDelay    = time.Second
	defaultMaxDelay     = 30 * time.Second
	defaultStallTimeout = 60 * time.Second
	// maxRetryAfter bounds how long a server's Retry-After can hold a call:
	// a longer wait is better reported to the user than silently sat out.
	maxRetryAfter = 60 * time.Second
)

// errStallCause is the cancellation cause of an attempt the watchdog ended.
var errStallCause = errors.New("stall watchdog fired")

// WithRetry returns p with retries: an attempt that fails with a Retryable
// error before anything was yielded to the consumer is repeated after a
// backoff, up to pol.MaxAttempts attempts; then the call fails with a
// *RetryError wrapping the last error. Once an event has been yielded, a
// failure is final and returned as is, because the consumer has already
// acted on a partial response. Every attempt is watched for stalls.
// Cancelling ctx aborts at once, also during a backoff or a stalled stream,
// and the stream then ends with ctx.Err().
func WithRetry(p Provider, pol RetryPolicy) Provider {
	if pol.MaxAttempts <= 0 {
		pol.MaxAttempts = defaultMaxAttempts
	}
	if pol.BaseDelay <= 0 {
		pol.BaseDelay = defaultBaseDelay
	}
	if pol.MaxDelay <= 0 {
		pol.MaxDelay = defaultMaxDelay
	}
	if pol.StallTimeout == 0 {
		pol.StallTimeout = defaultStallTimeout
	}
	if pol.Sleep == nil {
		pol.Sleep = sleep
	}
	return &retrying{inner: p, pol: pol}
}

type retrying struct {
	inner Provider
	pol   RetryPolicy
}

func (r *retrying) Name() string { return r.inner.Name() }

// Limits are the inner provider's.
func (r *retrying) Limits() Limits { return LimitsOf(r.inner) }

func (r *retrying) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for attempt := 1; ; attempt++ {
			yielded, stopped, err := r.attempt(ctx, req, yield)
			if stopped || err == nil {
				return
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				yield(nil, ctxErr)
				return
			}
			if yielded || !Retryable(err) {
				yield(nil, err)
				return
			}
			if attempt >= r.pol.MaxAttempts {
				yield(nil, &RetryError{Attempts: attempt, Last: err})
				return
			}
			delay := r.delay(attempt, err)
			if r.pol.OnRetry != nil {
				r.pol.OnRetry(ctx, attempt, delay, err)
			}
			if err := r.pol.Sleep(ctx, delay); err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					err = ctxErr
				}
				yield(nil, err)
				return
			}
		}
	}
}

// attempt runs one call of the inner provider, passing its events on. It
// reports whether any event reached the consumer, whether the consumer
// stopped the iteration, and the attempt's error.
func (r *retrying) attempt(ctx context.Context, req *Request, yield func(Event, error) bool) (yielded, stopped bool, err error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := newWatchdog(r.pol.StallTimeout, func() { cancel(errStallCause) })
	defer w.stop()

	for ev, evErr := range r.inner.Stream(actx, req) {
		if evErr != nil {
			err = evErr
			break
		}
		w.stop() // time spent by the consumer is not a stall
		if !yield(ev, nil) {
			return true, true, nil
		}
		yielded = true
		w.reset()
	}
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errStallCause) {
		return yielded, false, fmt.Errorf("%s: no event for %s: %w", r.inner.Name(), r.pol.StallTimeout, ErrStalled)
	}
	return yielded, false, err
}

// delay is the wait before the attempt after attempt: exponential backoff
// with full jitter, raised to the server's Retry-After when it asks for more.
func (r *retrying) delay(attempt int, err error) time.Duration {
	ceil := r.pol.BaseDelay
	for i := 1; i < attempt && ceil < r.pol.MaxDelay; i++ {
		ceil *= 2
	}
	ceil = min(ceil, r.pol.MaxDelay)
	d := rand.N(ceil + 1)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		d = max(d, min(apiErr.RetryAfter, maxRetryAfter))
	}
	return d
}

// watchdog calls fire when it is not reset within d; d < 0 disables it.
type watchdog struct {
	d     time.Duration
	timer *time.Timer
}

func newWatchdog(d time.Duration, fire func()) *watchdog {
	w := &watchdog{d: d}
	if d > 0 {
		w.timer = time.AfterFunc(d, fire)
	}
	return w
}

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *watchdog) reset() {
	if w.timer != nil {
		w.timer.Reset(w.d)
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ParseRetryAfter returns how long a server asked to wait before retrying:
// the retry-after-ms header (milliseconds, sent by Anthropic and OpenAI),
// else Retry-After as delay-seconds or an HTTP date relative to now. It
// returns zero when neither is present or parseable.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return scaled(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return scaled(secs, time.Second)
	}
	if at, err := http.ParseTime(v); err == nil {
		if d := at.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// scaled converts n units to a Duration, clamped to [0, 24h] so that absurd
// or non-finite header values cannot overflow.
func scaled(n float64, unit time.Duration) time.Duration {
	const ceiling = 24 * time.Hour
	switch {
	case !(n > 0): // also NaN
		return 0
	case n >= float64(ceiling/unit):
		return ceiling
	}
	return time.Duration(n * float64(unit))
}

// NoRetry reports a server's "x-should-retry: false" (APIError.NoRetry).
func NoRetry(h http.Header) bool { return h.Get("x-should-retry") == "false" }
