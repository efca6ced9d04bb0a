package providertest

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// guard bounds how long the suite waits for something that must happen
// promptly; it is a failure deadline, never a pause.
const guard = 10 * time.Second

const longText = "one two three four five six seven eight nine ten eleven twelve"

func (s *suite) testFaults(t *testing.T) {
	t.Parallel()

	t.Run("RateLimit", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultRateLimit, RetryAfter: 7}})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		apiErr := requireAPIError(t, r.err, http.StatusTooManyRequests)
		if !errors.Is(r.err, llm.ErrRateLimited) || !llm.Retryable(r.err) {
			t.Fatalf("err = %v, want retryable ErrRateLimited", r.err)
		}
		if apiErr.RetryAfter != 7*time.Second {
			t.Fatalf("RetryAfter = %v, want 7s", apiErr.RetryAfter)
		}
		if apiErr.Provider != b.p.Name() || apiErr.Message == "" {
			t.Fatalf("APIError = %+v, want provider %q and a message", apiErr, b.p.Name())
		}
	})

	t.Run("ServerError", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer}})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		requireAPIError(t, r.err, http.StatusInternalServerError)
		if !errors.Is(r.err, llm.ErrServer) || !llm.Retryable(r.err) {
			t.Fatalf("err = %v, want retryable ErrServer", r.err)
		}
	})

	t.Run("Unavailable", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: http.StatusServiceUnavailable}})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		requireAPIError(t, r.err, http.StatusServiceUnavailable)
	})

	t.Run("BadRequestIsNotRetryable", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Text: "never", Expect: "a word the request lacks"})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		requireAPIError(t, r.err, http.StatusBadRequest)
		if !errors.Is(r.err, llm.ErrInvalidRequest) || llm.Retryable(r.err) {
			t.Fatalf("err = %v, want non-retryable ErrInvalidRequest", r.err)
		}
	})

	t.Run("CutMidStream", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Text: longText, Fault: &llmtest.Fault{Kind: llmtest.FaultCut, AfterEvents: 5}})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		if !errors.Is(r.err, llm.ErrConnection) {
			t.Fatalf("err = %v, want ErrConnection", r.err)
		}
		if text, _, _, _ := deltas(r.events); text == "" {
			t.Fatal("no text arrived before the cut")
		}
	})

	t.Run("CutBeforeFirstEvent", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Text: longText, Fault: &llmtest.Fault{Kind: llmtest.FaultCut}})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		if !errors.Is(r.err, llm.ErrConnection) {
			t.Fatalf("err = %v, want ErrConnection", r.err)
		}
	})

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Text: longText, Fault: &llmtest.Fault{Kind: llmtest.FaultMalformed, AfterEvents: 4}})
		r := mustFail(t, b.p.Stream(context.Background(), request("hi")))
		if !errors.Is(r.err, llm.ErrBadResponse) && !errors.Is(r.err, llm.ErrConnection) {
			t.Fatalf("err = %v, want ErrBadResponse or ErrConnection", r.err)
		}
		if !llm.Retryable(r.err) {
			t.Fatalf("err = %v, want retryable", r.err)
		}
	})

	t.Run("Stall", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Text: longText, Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}})
		p := llm.WithRetry(b.p, llm.RetryPolicy{StallTimeout: 200 * time.Millisecond, MaxAttempts: 1})
		r := mustFail(t, p.Stream(context.Background(), request("hi")))
		if !errors.Is(r.err, llm.ErrStalled) || errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want ErrStalled", r.err)
		}
	})
}

func requireAPIError(t *testing.T, err error, status int) *llm.APIError {
	t.Helper()
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v (%T), want an *llm.APIError", err, err)
	}
	if apiErr.StatusCode != status {
		t.Fatalf("status = %d, want %d (%v)", apiErr.StatusCode, status, err)
	}
	return apiErr
}

func (s *suite) testRetry(t *testing.T) {
	t.Parallel()

	t.Run("RateLimitThenSuccess", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t,
			llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultRateLimit, RetryAfter: 2}},
			llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultCut, AfterEvents: 1}},
			llmtest.Turn{Text: "recovered"})
		var mu sync.Mutex
		var sleeps []time.Duration
		p := llm.WithRetry(b.p, llm.RetryPolicy{
			BaseDelay: time.Millisecond,
			MaxDelay:  time.Millisecond,
			Sleep: func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				sleeps = append(sleeps, d)
				return ctx.Err()
			},
		})
		r := mustSucceed(t, p.Stream(context.Background(), request("hi")))
		if r.resp.Message.Text() != "recovered" {
			t.Fatalf("text = %q, want recovered", r.resp.Message.Text())
		}
		if n := len(b.srv.Requests()); n != 3 || b.srv.Remaining() != 0 {
			t.Fatalf("server saw %d requests with %d turns left, want 3 and 0", n, b.srv.Remaining())
		}
		mu.Lock()
		defer mu.Unlock()
		// The first wait honours Retry-After over the 1ms backoff; the
		// second (after the cut) is backoff only.
		if len(sleeps) != 2 || sleeps[0] != 2*time.Second || sleeps[1] > time.Millisecond {
			t.Fatalf("sleeps = %v, want [2s, <=1ms]", sleeps)
		}
	})
}

// testNoRetry: an answer with "x-should-retry: false" (the scripted
// server's, once its script is spent) is not retried, whatever its status.
func (s *suite) testNoRetry(t *testing.T) {
	t.Parallel()
	b := s.setup(t, llmtest.Turn{Text: "only one"})
	p := llm.WithRetry(b.p, llm.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	mustSucceed(t, p.Stream(context.Background(), request("hi")))
	err := mustFail(t, p.Stream(context.Background(), request("again"))).err
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !apiErr.NoRetry || llm.Retryable(err) {
		t.Fatalf("err = %v; want a 500 the server said not to retry", err)
	}
	if n := len(b.srv.Requests()); n != 2 {
		t.Fatalf("server saw %d requests, want 2 (no retry)", n)
	}
}

// testCancel cancels a call after its first delta, while the server is
// still streaming, and checks that the stream ends at once with
// context.Canceled and that the server saw its request end.
func (s *suite) testCancel(t *testing.T) {
	t.Parallel()
	b := s.setup(t, llmtest.Turn{Text: longText, Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 5}})
	proxyURL, ended := observe(t, b.srv.URL)
	p := s.newProvider(t, proxyURL)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		var r result
		for ev, err := range p.Stream(ctx, request("hi")) {
			if err != nil {
				r.err = err
				break
			}
			r.events = append(r.events, ev)
			if _, ok := ev.(llm.TextDelta); ok {
				cancel()
			}
		}
		done <- r
	}()

	var r result
	select {
	case r = <-done:
	case <-time.After(guard):
		t.Fatal("stream did not end after cancellation")
	}
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", r.err)
	}
	if text, _, _, _ := deltas(r.events); text == "" {
		t.Fatal("no delta arrived before the cancellation")
	}
	select {
	case <-ended:
	case <-time.After(guard):
		t.Fatal("the server never saw the request end")
	}
}

// observe puts a reverse proxy in front of target and returns its URL and a
// channel that receives when a proxied request's context ends early, which
// is what a server sees when its client goes away.
func observe(t *testing.T, target string) (string, <-chan struct{}) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	ended := make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Deferred: a proxy whose client went away mid-body aborts the
		// handler with a panic (http.ErrAbortHandler). That panic also
		// says the request ended early: a write to the client can fail
		// before the server's read of the connection has seen it close
		// and cancelled the request's context.
		defer func() {
			v := recover()
			if r.Context().Err() != nil || v == http.ErrAbortHandler {
				select {
				case ended <- struct{}{}:
				default:
				}
			}
			if v != nil {
				panic(v)
			}
		}()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL, ended
}
