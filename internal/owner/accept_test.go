package owner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/testutil"
)

// TestSubscribeToASilentOwnerGivesUp: an owner that accepts the
// connection and never answers (stopped with SIGSTOP, or hung) fails a
// subscription after AcceptTimeout with ErrUnreachable, so a follower
// that waits on it (arbor serve's watcher of the run) falls back to
// reading the store instead of waiting for good.
func TestSubscribeToASilentOwnerGivesUp(t *testing.T) {
	t.Parallel()
	sock := testutil.SilentListener(t)
	done := make(chan error, 1)
	go func() {
		done <- owner.Client{Socket: sock, AcceptTimeout: 200 * time.Millisecond}.Subscribe(context.Background(),
			func(uint64) { t.Error("a silent owner accepted the subscription") }, func(owner.Event) {})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, owner.ErrUnreachable) {
			t.Fatalf("Subscribe to a silent owner: %v, want ErrUnreachable", err)
		}
	case <-time.After(time.Minute): // hang guard
		t.Fatal("Subscribe to a silent owner never gave up")
	}
}
