package app_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
)

func TestRunner(t *testing.T) {
	t.Parallel()

	t.Run("jobs run one at a time in order and Submit never blocks", func(t *testing.T) {
		t.Parallel()
		r := app.NewRunner(0)
		r.Start(t.Context())
		release, started := make(chan struct{}), make(chan struct{})
		var mu sync.Mutex
		var order []int
		running := 0
		for i := range 10_000 {
			err := r.Submit(app.Job{Kind: "turn", Run: func(context.Context) {
				if i == 0 {
					close(started)
					<-release
				}
				mu.Lock()
				running++
				if running > 1 {
					t.Error("two jobs ran at once")
				}
				order = append(order, i)
				running--
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
		}
		<-started
		if kind, queued := r.State(); kind != "turn" || queued != 9_999 {
			t.Fatalf("state %q, %d queued; want turn and 9999", kind, queued)
		}
		close(release)
		r.Close()
		for i, v := range order {
			if v != i {
				t.Fatalf("job %d ran as number %d", v, i)
			}
		}
		if len(order) != 10_000 {
			t.Fatalf("%d jobs ran", len(order))
		}
		if err := r.Submit(app.Job{Run: func(context.Context) {}}); !errors.Is(err, app.ErrRunnerClosed) {
			t.Fatalf("submit after close: %v", err)
		}
	})

	t.Run("a limit refuses jobs instead of blocking", func(t *testing.T) {
		t.Parallel()
		r := app.NewRunner(2)
		r.Start(t.Context())
		release := make(chan struct{})
		started := make(chan struct{})
		_ = r.Submit(app.Job{Run: func(context.Context) { close(started); <-release }})
		<-started
		for range 2 {
			if err := r.Submit(app.Job{Run: func(context.Context) {}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Submit(app.Job{Run: func(context.Context) {}}); !errors.Is(err, app.ErrQueueFull) {
			t.Fatalf("third queued job: %v, want ErrQueueFull", err)
		}
		internal := false
		if err := r.SubmitInternal(app.Job{Run: func(context.Context) { internal = true }}); err != nil {
			t.Fatalf("internal job past the limit: %v", err)
		}
		close(release)
		r.Close()
		if !internal {
			t.Fatal("the internal job did not run")
		}
		if err := r.SubmitInternal(app.Job{Run: func(context.Context) {}}); !errors.Is(err, app.ErrRunnerClosed) {
			t.Fatalf("internal job after close: %v", err)
		}
	})

	t.Run("cancel stops the running job and leaves the queue; drop empties it", func(t *testing.T) {
		t.Parallel()
		r := app.NewRunner(0)
		r.Start(t.Context())
		started := make(chan struct{})
		cause := errors.New("client cancelled")
		var got error
		_ = r.Submit(app.Job{Kind: "turn", Run: func(ctx context.Context) {
			close(started)
			<-ctx.Done()
			got = context.Cause(ctx)
		}})
		_ = r.Submit(app.Job{Kind: "model", Run: func(context.Context) { t.Error("a dropped job ran") }})
		_ = r.Submit(app.Job{Kind: "turn", Run: func(context.Context) { t.Error("a dropped job ran") }})
		<-started
		// Drop while the first job still runs: once it is cancelled the
		// runner may start the next job at once.
		dropped := r.Drop()
		if len(dropped) != 2 {
			t.Fatalf("dropped %d jobs, want 2", len(dropped))
		}
		ran := false
		_ = r.Submit(app.Job{Kind: "model", Run: func(context.Context) { ran = true }})
		if kind, ok := r.Cancel(cause); !ok || kind != "turn" {
			t.Fatalf("cancel: %q %v", kind, ok)
		}
		r.Close()
		if !errors.Is(got, cause) || !ran {
			t.Fatalf("cause %v, later job ran %v", got, ran)
		}
	})

	t.Run("stop cancels the running job and runs the queued ones cancelled", func(t *testing.T) {
		t.Parallel()
		r := app.NewRunner(0)
		r.Start(context.Background())
		started := make(chan struct{})
		_ = r.Submit(app.Job{Run: func(ctx context.Context) { close(started); <-ctx.Done() }})
		var later error
		_ = r.Submit(app.Job{Run: func(ctx context.Context) { later = ctx.Err() }})
		<-started
		r.Stop()
		r.Stop()
		if !errors.Is(later, context.Canceled) {
			t.Fatalf("queued job after stop saw %v", later)
		}
	})
}
