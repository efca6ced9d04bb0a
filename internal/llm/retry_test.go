package llm_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

// script is what one attempt of the fake provider does.
type script func(ctx context.Context, yield func(llm.Event, error) bool)

// fakeProvider plays one script per call, in order.
type fakeProvider struct {
	mu      sync.Mutex
	scripts []script
	calls   int
}

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) Stream(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		f.mu.Lock()
		i := f.calls
		f.calls++
		f.mu.Unlock()
		if i >= len(f.scripts) {
			yield(nil, errors.New("fake provider: no script left"))
			return
		}
		f.scripts[i](ctx, yield)
	}
}

func (f *fakeProvider) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func succeed(text string) script {
	return func(_ context.Context, yield func(llm.Event, error) bool) {
		if !yield(llm.TextDelta{Text: text}, nil) {
			return
		}
		yield(llm.Done{Response: &llm.Response{
			Message:    llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart(text)}},
			StopReason: llm.StopEndTurn,
		}}, nil)
	}
}

func fail(err error) script {
	return func(_ context.Context, yield func(llm.Event, error) bool) { yield(nil, err) }
}

// hang yields first (if any), signals started, then produces nothing until
// ctx ends, as a stalled HTTP stream does.
func hang(started chan<- struct{}, first ...llm.Event) script {
	return func(ctx context.Context, yield func(llm.Event, error) bool) {
		for _, ev := range first {
			if !yield(ev, nil) {
				return
			}
		}
		if started != nil {
			close(started)
		}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

type retryBundle struct {
	fake    *fakeProvider
	mu      sync.Mutex
	sleeps  []time.Duration
	retried []int
	errs    []error
}

// setup returns a bundle whose policy records sleeps and retries instead of
// waiting; pol's zero fields take the defaults.
func setup(t *testing.T, pol llm.RetryPolicy, scripts ...script) (*retryBundle, llm.Provider) {
	t.Helper()
	b := &retryBundle{fake: &fakeProvider{scripts: scripts}}
	if pol.Sleep == nil {
		pol.Sleep = func(ctx context.Context, d time.Duration) error {
			b.mu.Lock()
			b.sleeps = append(b.sleeps, d)
			b.mu.Unlock()
			return ctx.Err()
		}
	}
	onRetry := pol.OnRetry
	pol.OnRetry = func(ctx context.Context, attempt int, d time.Duration, err error) {
		b.mu.Lock()
		b.retried = append(b.retried, attempt)
		b.errs = append(b.errs, err)
		b.mu.Unlock()
		if onRetry != nil {
			onRetry(ctx, attempt, d, err)
		}
	}
	return b, llm.WithRetry(b.fake, pol)
}

func collect(ctx context.Context, p llm.Provider) ([]llm.Event, error) {
	var evs []llm.Event
	for ev, err := range p.Stream(ctx, &llm.Request{Model: "m"}) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

func serverErr(status int, retryAfter time.Duration) error {
	return &llm.APIError{Provider: "fake", StatusCode: status, RetryAfter: retryAfter, Message: "boom"}
}

func TestWithRetry(t *testing.T) {
	t.Parallel()

	t.Run("SuccessPassesThrough", func(t *testing.T) {
		t.Parallel()
		b, p := setup(t, llm.RetryPolicy{}, succeed("hi"))
		evs, err := collect(context.Background(), p)
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if len(evs) != 2 || evs[0] != (llm.TextDelta{Text: "hi"}) {
			t.Fatalf("events = %#v", evs)
		}
		if _, ok := evs[1].(llm.Done); !ok {
			t.Fatalf("last event = %#v, want Done", evs[1])
		}
		if b.fake.Calls() != 1 || len(b.sleeps) != 0 {
			t.Fatalf("calls = %d, sleeps = %v", b.fake.Calls(), b.sleeps)
		}
		if p.Name() != "fake" {
			t.Fatalf("Name() = %q", p.Name())
		}
	})

	t.Run("RetriesRetryableWithJitteredBackoff", func(t *testing.T) {
		t.Parallel()
		pol := llm.RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: 150 * time.Millisecond}
		b, p := setup(t, pol,
			fail(serverErr(503, 0)),
			fail(fmtConnErr()),
			fail(serverErr(500, 0)),
			succeed("ok"))
		resp, err := llm.Collect(p.Stream(context.Background(), &llm.Request{}))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if resp.Message.Text() != "ok" {
			t.Fatalf("text = %q", resp.Message.Text())
		}
		if b.fake.Calls() != 4 {
			t.Fatalf("calls = %d, want 4", b.fake.Calls())
		}
		ceilings := []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond}
		if len(b.sleeps) != len(ceilings) {
			t.Fatalf("sleeps = %v", b.sleeps)
		}
		for i, d := range b.sleeps {
			if d < 0 || d > ceilings[i] {
				t.Errorf("sleep %d = %v, want within [0, %v]", i, d, ceilings[i])
			}
		}
		if got := b.retried; len(got) != 3 || got[0] != 1 || got[2] != 3 {
			t.Fatalf("OnRetry attempts = %v, want [1 2 3]", got)
		}
		if !errors.Is(b.errs[1], llm.ErrConnection) {
			t.Fatalf("OnRetry err = %v, want ErrConnection", b.errs[1])
		}
	})

	t.Run("NonRetryableIsReturnedAsIs", func(t *testing.T) {
		t.Parallel()
		b, p := setup(t, llm.RetryPolicy{}, fail(serverErr(400, 0)), succeed("never"))
		_, err := collect(context.Background(), p)
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Fatalf("err = %v, want the 400 APIError", err)
		}
		var retryErr *llm.RetryError
		if errors.As(err, &retryErr) {
			t.Fatalf("err = %v, must not be a RetryError", err)
		}
		if b.fake.Calls() != 1 {
			t.Fatalf("calls = %d, want 1", b.fake.Calls())
		}
	})

	t.Run("ExhaustedAttemptsReturnRetryError", func(t *testing.T) {
		t.Parallel()
		b, p := setup(t, llm.RetryPolicy{MaxAttempts: 3},
			fail(serverErr(500, 0)), fail(serverErr(502, 0)), fail(serverErr(503, 0)), succeed("never"))
		_, err := collect(context.Background(), p)
		var retryErr *llm.RetryError
		if !errors.As(err, &retryErr) || retryErr.Attempts != 3 {
			t.Fatalf("err = %v, want RetryError after 3 attempts", err)
		}
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || !errors.Is(err, llm.ErrServer) {
			t.Fatalf("err = %v, want it to wrap the last 503", err)
		}
		if b.fake.Calls() != 3 || len(b.sleeps) != 2 {
			t.Fatalf("calls = %d, sleeps = %v", b.fake.Calls(), b.sleeps)
		}
	})

	t.Run("HonoursRetryAfterBeyondMaxDelay", func(t *testing.T) {
		t.Parallel()
		pol := llm.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
		b, p := setup(t, pol,
			fail(serverErr(429, 5*time.Second)),
			fail(serverErr(429, time.Hour)),
			succeed("ok"))
		if _, err := collect(context.Background(), p); err != nil {
			t.Fatalf("stream: %v", err)
		}
		want := []time.Duration{5 * time.Second, 60 * time.Second}
		if len(b.sleeps) != 2 || b.sleeps[0] != want[0] || b.sleeps[1] != want[1] {
			t.Fatalf("sleeps = %v, want %v", b.sleeps, want)
		}
	})

	t.Run("FailureAfterYieldIsFinal", func(t *testing.T) {
		t.Parallel()
		partial := func(_ context.Context, yield func(llm.Event, error) bool) {
			if yield(llm.TextDelta{Text: "par"}, nil) {
				yield(nil, fmtConnErr())
			}
		}
		b, p := setup(t, llm.RetryPolicy{}, partial, succeed("never"))
		evs, err := collect(context.Background(), p)
		if !errors.Is(err, llm.ErrConnection) || len(evs) != 1 {
			t.Fatalf("events = %v, err = %v; want one delta then ErrConnection", evs, err)
		}
		var retryErr *llm.RetryError
		if errors.As(err, &retryErr) {
			t.Fatalf("err = %v, must not be a RetryError", err)
		}
		if b.fake.Calls() != 1 {
			t.Fatalf("calls = %d, want 1", b.fake.Calls())
		}
	})

	t.Run("ConsumerStopEndsTheCall", func(t *testing.T) {
		t.Parallel()
		stopped := make(chan struct{})
		s := func(_ context.Context, yield func(llm.Event, error) bool) {
			if !yield(llm.TextDelta{Text: "a"}, nil) {
				close(stopped)
				return
			}
			t.Error("provider continued after the consumer stopped")
		}
		b, p := setup(t, llm.RetryPolicy{}, s)
		for range p.Stream(context.Background(), &llm.Request{}) {
			break
		}
		<-stopped
		if b.fake.Calls() != 1 {
			t.Fatalf("calls = %d", b.fake.Calls())
		}
	})
}

func TestWithRetryStall(t *testing.T) {
	t.Parallel()
	const stall = 30 * time.Millisecond

	t.Run("StalledAttemptIsRetried", func(t *testing.T) {
		t.Parallel()
		b, p := setup(t, llm.RetryPolicy{StallTimeout: stall}, hang(nil), succeed("ok"))
		resp, err := llm.Collect(p.Stream(context.Background(), &llm.Request{}))
		if err != nil || resp.Message.Text() != "ok" {
			t.Fatalf("resp = %v, err = %v", resp, err)
		}
		if len(b.errs) != 1 || !errors.Is(b.errs[0], llm.ErrStalled) || errors.Is(b.errs[0], context.Canceled) {
			t.Fatalf("retried on %v, want ErrStalled", b.errs)
		}
	})

	t.Run("StallWithOneAttemptFails", func(t *testing.T) {
		t.Parallel()
		_, p := setup(t, llm.RetryPolicy{StallTimeout: stall, MaxAttempts: 1}, hang(nil))
		_, err := collect(context.Background(), p)
		if !errors.Is(err, llm.ErrStalled) || errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want ErrStalled", err)
		}
	})

	t.Run("StallAfterYieldIsFinal", func(t *testing.T) {
		t.Parallel()
		b, p := setup(t, llm.RetryPolicy{StallTimeout: stall}, hang(nil, llm.TextDelta{Text: "x"}), succeed("never"))
		evs, err := collect(context.Background(), p)
		if !errors.Is(err, llm.ErrStalled) || len(evs) != 1 || b.fake.Calls() != 1 {
			t.Fatalf("events = %v, err = %v, calls = %d", evs, err, b.fake.Calls())
		}
	})

	t.Run("SlowConsumerIsNotAStall", func(t *testing.T) {
		t.Parallel()
		_, p := setup(t, llm.RetryPolicy{StallTimeout: stall, MaxAttempts: 1}, succeed("ok"))
		var n int
		for _, err := range p.Stream(context.Background(), &llm.Request{}) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			n++
			// The consumer outlasting the timeout must not count against
			// the provider: the watchdog only runs while waiting on it.
			<-time.After(3 * stall)
		}
		if n != 2 {
			t.Fatalf("events = %d, want 2", n)
		}
	})

	t.Run("DisabledByNegativeTimeout", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		_, p := setup(t, llm.RetryPolicy{StallTimeout: -1}, hang(started))
		go func() {
			<-started
			<-time.After(3 * stall)
			cancel()
		}()
		_, err := collect(ctx, p)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled (no stall detection)", err)
		}
	})
}

func TestWithRetryCancel(t *testing.T) {
	t.Parallel()

	t.Run("DuringBackoff", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		// The real sleep: a 60s Retry-After wait that cancellation must cut.
		pol := llm.RetryPolicy{OnRetry: func(context.Context, int, time.Duration, error) { cancel() }}
		b := &fakeProvider{scripts: []script{fail(serverErr(429, time.Minute)), succeed("never")}}
		p := llm.WithRetry(b, pol)
		_, err := collect(ctx, p)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if b.Calls() != 1 {
			t.Fatalf("calls = %d, want 1", b.Calls())
		}
	})

	t.Run("DuringStalledStream", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		b, p := setup(t, llm.RetryPolicy{StallTimeout: time.Hour}, hang(started), succeed("never"))
		go func() {
			<-started
			cancel()
		}()
		_, err := collect(ctx, p)
		if !errors.Is(err, context.Canceled) || errors.Is(err, llm.ErrStalled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if b.fake.Calls() != 1 || len(b.retried) != 0 {
			t.Fatalf("calls = %d, retries = %v", b.fake.Calls(), b.retried)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"absent", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"huge", http.Header{"Retry-After": {"1e300"}}, 24 * time.Hour},
		{"nan", http.Header{"Retry-After": {"NaN"}}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := llm.ParseRetryAfter(c.header, now); got != c.want {
				t.Fatalf("ParseRetryAfter(%v) = %v, want %v", c.header, got, c.want)
			}
		})
	}
}

func fmtConnErr() error {
	return errors.Join(llm.ErrConnection, errors.New("read: connection reset by peer"))
}

// TestNoRetry: "x-should-retry: false" makes any error final, a 5xx or a
// rate limit included; without it those are retried.
func TestNoRetry(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	if llm.NoRetry(h) {
		t.Fatal("no header: NoRetry")
	}
	h.Set("X-Should-Retry", "false")
	if !llm.NoRetry(h) {
		t.Fatal("x-should-retry: false: not NoRetry")
	}
	for _, status := range []int{429, 500, 529} {
		err := fmtWrap(&llm.APIError{Provider: "p", StatusCode: status})
		if !llm.Retryable(err) {
			t.Errorf("%d: not retryable", status)
		}
		if llm.Retryable(fmtWrap(&llm.APIError{Provider: "p", StatusCode: status, NoRetry: true})) {
			t.Errorf("%d with x-should-retry: false: retryable", status)
		}
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("call"), err) }
