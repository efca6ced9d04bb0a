package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// The queued writes a driver may offer besides store.Store (group
// commit): the tree's and the agent's, declared here as they use them.
type (
	asyncCommitter interface {
		CommitAsync(ctx context.Context, run *store.Run, nodes ...store.Node) (wait func() error)
	}
	stepQueuer interface {
		QueueStep(ctx context.Context, st store.Step) (wait func() (int64, error))
	}
)

func testQueued(t *testing.T, open Opener) {
	// A queued write's wait may be called again, and from several
	// goroutines at once (the tree's settle and the agent may both wait
	// for a turn's last write): every call returns the same outcome.
	t.Run("WaitAgainAndAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		ac, ok := b.st.(asyncCommitter)
		sq, ok2 := b.st.(stepQueuer)
		if !ok || !ok2 {
			t.Fatalf("%T queues neither commits nor steps", b.st)
		}
		noErr(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}))
		b.session(t, "s1")
		good := ac.CommitAsync(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "active"})
		bad := ac.CommitAsync(b.ctx, nil, store.Node{RunID: "nope", ID: 1, Kind: "goal", Goal: "g", State: "active"})
		step := sq.QueueStep(b.ctx, store.Step{SessionID: "s1", Messages: []llm.Message{text(llm.RoleUser, "hi")}})
		check := func() error {
			if err := good(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			if err := bad(); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("commit to an unknown run: %v, want ErrNotFound", err)
			}
			if last, err := step(); err != nil || last != 1 {
				return fmt.Errorf("step: last %d, %v; want 1", last, err)
			}
			return nil
		}
		results := make(chan error, 4)
		for range 4 {
			go func() { results <- check() }()
		}
		for range 4 {
			select {
			case err := <-results:
				noErr(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("a wait never returned")
			}
		}
		noErr(t, check()) // and once more, after all of them
	})
}
