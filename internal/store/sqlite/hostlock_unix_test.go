//go:build unix

package sqlite

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/store"
)

// TestHostLockHeldByTransactions: a store holds the host write lock from
// before a transaction's first statement to after its commit, so another
// process's writer (here another open of the lock file) waits for it in
// the kernel instead of polling SQLite's lock; the lock is free between
// transactions, and a second store on the file writes once it is.
func TestHostLockHeldByTransactions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := openHostLock(b.path)
	if other.f == nil {
		t.Fatal("cannot open the lock file")
	}
	t.Cleanup(other.close)
	try := func() error { return syscall.Flock(int(other.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

	inTx, proceed, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	release := func() { once.Do(func() { close(proceed) }) }
	t.Cleanup(release) // before the store closes, should the test fail early
	go func() {
		done <- b.st.inTx(b.ctx, func(tx *wtx) error {
			close(inTx)
			<-proceed
			_, err := tx.ExecContext(b.ctx, "UPDATE sessions SET title = title")
			return err
		})
	}()
	<-inTx
	if err := try(); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("flock during a transaction = %v, want EWOULDBLOCK", err)
	}
	release()
	must(t, <-done)
	must(t, try())

	// While this "process" holds the lock, a second store's write waits;
	// it commits once the lock is released.
	second := openAt(t, b.path)
	wrote := make(chan error, 1)
	go func() { wrote <- second.CreateSession(b.ctx, store.Session{ID: "s2"}) }()
	must(t, syscall.Flock(int(other.f.Fd()), syscall.LOCK_UN))
	must(t, <-wrote)
	if _, err := b.st.GetSession(b.ctx, "s2"); err != nil {
		t.Fatalf("the second store's session: %v", err)
	}
}
