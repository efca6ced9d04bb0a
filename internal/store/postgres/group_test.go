package postgres

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// queued holds st's committer while fn queues writes, so that they are
// all taken into one batch once it returns.
func queued(st *Store, fn func()) {
	st.group.hold(true)
	defer st.group.hold(false)
	fn()
}

// statsSince returns the transactions and writes st sent since tx0, w0.
func statsSince(st *Store, tx0, w0 int64) (int64, int64) {
	tx, w := st.WriteStats()
	return tx - tx0, w - w0
}

func TestGroupCommitOneFailureFailsNoOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	must(t, b.st.CreateRun(ctx, store.Run{ID: "r1"}))
	must(t, b.st.CreateRun(ctx, store.Run{ID: "done", Status: store.RunComplete}))
	must(t, b.st.CreateSession(ctx, store.Session{ID: "taken", Title: "first"}))
	tx0, w0 := b.st.WriteStats()

	var (
		first, taken, second, missing func() (int64, error)
		node1, complete, node2        func() error
	)
	queued(b.st, func() {
		first = b.st.QueueStep(ctx, store.Step{Create: &store.Session{ID: "s1"}, Messages: []llm.Message{llm.UserText("one")}})
		taken = b.st.QueueStep(ctx, store.Step{Create: &store.Session{ID: "taken", Title: "second"}, Messages: []llm.Message{llm.UserText("lost")}})
		// Depends on the session the first write creates, in the same
		// transaction.
		second = b.st.QueueStep(ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText("two"), llm.UserText("three")}})
		node1 = b.st.CommitAsync(ctx, &store.Run{ID: "r1", Status: store.RunRunning, Result: "half"},
			store.Node{RunID: "r1", ID: 1, Kind: store.KindGoal, State: store.StateActive})
		complete = b.st.CommitAsync(ctx, &store.Run{ID: "done", Status: store.RunFailed})
		missing = b.st.QueueStep(ctx, store.Step{SessionID: "nope", Messages: []llm.Message{llm.UserText("x")}})
		node2 = b.st.CommitAsync(ctx, nil, store.Node{RunID: "r1", ID: 2, ParentID: 1, Kind: store.KindTask})
	})

	if last, err := first(); err != nil || last != 1 {
		t.Fatalf("first step: last seq %d, %v; want 1, nil", last, err)
	}
	if _, err := taken(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("step creating a taken session: %v, want ErrConflict", err)
	}
	if last, err := second(); err != nil || last != 3 {
		t.Fatalf("second step: last seq %d, %v; want 3, nil", last, err)
	}
	must(t, node1())
	if err := complete(); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("commit failing a complete run: %v, want ErrConflict", err)
	}
	if _, err := missing(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("step of an unknown session: %v, want ErrNotFound", err)
	}
	must(t, node2())

	// Three failures, each sent again without the write that failed: four
	// transactions of 7, 6, 5 and 4 writes, the last one committed.
	if txs, writes := statsSince(b.st, tx0, w0); txs != 4 || writes != 22 {
		t.Fatalf("sent %d transactions of %d writes in all, want 4 of 22", txs, writes)
	}
	msgs, err := b.st.Messages(ctx, "s1", 0)
	must(t, err)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Message.Text())
	}
	if got := strings.Join(texts, ","); got != "one,two,three" {
		t.Fatalf("messages of s1: %s, want one,two,three", got)
	}
	sess, err := b.st.GetSession(ctx, "taken")
	must(t, err)
	if sess.Title != "first" {
		t.Fatalf("taken session's title %q, want first", sess.Title)
	}
	if msgs, err := b.st.Messages(ctx, "taken", 0); err != nil || len(msgs) != 0 {
		t.Fatalf("messages of the taken session: %v, %v; want none", msgs, err)
	}
	r, err := b.st.GetRun(ctx, "r1")
	must(t, err)
	if r.Result != "half" {
		t.Fatalf("run r1's result %q, want half", r.Result)
	}
	nodes, err := b.st.Nodes(ctx, "r1")
	must(t, err)
	if len(nodes) != 2 {
		t.Fatalf("run r1 has %d nodes, want 2", len(nodes))
	}
	if r, err := b.st.GetRun(ctx, "done"); err != nil || r.Status != store.RunComplete {
		t.Fatalf("run done: %v, %v; want it complete", r.Status, err)
	}
}

func TestGroupCommitShares(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	must(t, b.st.CreateRun(ctx, store.Run{ID: "r1"}))
	tx0, w0 := b.st.WriteStats()
	const n = 10
	waits := make([]func() error, n)
	queued(b.st, func() {
		for i := range waits {
			waits[i] = b.st.CommitAsync(ctx, nil, store.Node{RunID: "r1", ID: int64(i + 1), Kind: store.KindTask})
		}
	})
	for _, wait := range waits {
		must(t, wait())
	}
	if txs, writes := statsSince(b.st, tx0, w0); txs != 1 || writes != n {
		t.Fatalf("sent %d transactions of %d writes, want 1 of %d", txs, writes, n)
	}
	nodes, err := b.st.Nodes(ctx, "r1")
	must(t, err)
	if len(nodes) != n {
		t.Fatalf("%d nodes, want %d", len(nodes), n)
	}
}

// A failure that is no one write's own (here a lock that cannot be had)
// sends every write of the batch again in a transaction of its own: only
// the write that meets the lock again fails.
func TestGroupCommitRunsEachAloneAfterACommonFailure(t *testing.T) {
	t.Parallel()
	dsn := setup(t).dsn
	st := openAt(t, dsn+"&lock_timeout=100ms")
	ctx := t.Context()
	for _, id := range []string{"a", "held", "b"} {
		must(t, st.CreateSession(ctx, store.Session{ID: id}))
	}
	conn, err := pgx.Connect(ctx, dsn)
	must(t, err)
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	must(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck // ends the lock; the test is over
	_, err = tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = 'held' FOR UPDATE`)
	must(t, err)

	tx0, w0 := st.WriteStats()
	waits := map[string]func() (int64, error){}
	queued(st, func() {
		for _, id := range []string{"a", "held", "b"} {
			waits[id] = st.QueueStep(ctx, store.Step{SessionID: id, Messages: []llm.Message{llm.UserText(id)}})
		}
	})
	for _, id := range []string{"a", "b"} {
		if last, err := waits[id](); err != nil || last != 1 {
			t.Fatalf("step of %s: last seq %d, %v; want 1, nil", id, last, err)
		}
	}
	var pe *pgconn.PgError
	if _, err := waits["held"](); !errors.As(err, &pe) || pe.Code != "55P03" {
		t.Fatalf("step of the locked session: %v, want lock_not_available (55P03)", err)
	}
	if txs, writes := statsSince(st, tx0, w0); txs != 4 || writes != 6 {
		t.Fatalf("sent %d transactions of %d writes in all, want 4 of 6 (the batch, then each alone)", txs, writes)
	}
	must(t, tx.Rollback(ctx))
	if msgs, err := st.Messages(ctx, "held", 0); err != nil || len(msgs) != 0 {
		t.Fatalf("messages of the locked session: %v, %v; want none", msgs, err)
	}
}

// A write whose caller gives up while it is queued is not run; the
// writes queued with it are.
func TestGroupCommitAbandonedWriteIsNotRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	var kept func() (int64, error)
	queued(b.st, func() {
		go func() {
			_, err := b.st.AppendMessages(ctx, "s1", llm.UserText("abandoned"))
			done <- err
		}()
		waitQueued(b.st, 1)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("abandoned append: %v, want context.Canceled", err)
		}
		kept = b.st.QueueStep(b.ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText("kept")}})
	})
	if last, err := kept(); err != nil || last != 1 {
		t.Fatalf("kept step: last seq %d, %v; want 1, nil", last, err)
	}
}

func TestWriteAfterCloseFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.Close())
	if err := b.st.CreateSession(b.ctx, store.Session{ID: "s1"}); !errors.Is(err, errClosed) {
		t.Fatalf("CreateSession after Close: %v, want %v", err, errClosed)
	}
	if err := b.st.CommitAsync(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: store.KindGoal})(); !errors.Is(err, errClosed) {
		t.Fatalf("CommitAsync after Close: %v, want %v", err, errClosed)
	}
}

// waitQueued waits until n writes are queued in st's held committer.
func waitQueued(st *Store, n int) {
	for {
		st.group.mu.Lock()
		queued := len(st.group.queue)
		st.group.mu.Unlock()
		if queued == n {
			return
		}
		runtime.Gosched()
	}
}

func TestReleaseLeaseSharesATransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	must(t, b.st.CreateSession(ctx, store.Session{ID: "s1"}))
	req := store.LeaseRequest{Key: "node:r1:2", Owner: store.Owner{ID: "a", PID: 1, Host: "h"}, Now: time.Now(), TTL: time.Minute}
	_, err := b.st.AcquireLease(ctx, req)
	must(t, err)
	tx0, w0 := b.st.WriteStats()
	released := make(chan error, 1)
	var step func() (int64, error)
	queued(b.st, func() {
		go func() { released <- b.st.ReleaseLease(ctx, req.Key, "a") }()
		waitQueued(b.st, 1)
		step = b.st.QueueStep(ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText("after")}})
	})
	must(t, <-released)
	if last, err := step(); err != nil || last != 1 {
		t.Fatalf("step: last seq %d, %v; want 1, nil", last, err)
	}
	if txs, writes := statsSince(b.st, tx0, w0); txs != 1 || writes != 2 {
		t.Fatalf("sent %d transactions of %d writes, want 1 of 2", txs, writes)
	}
	if _, err := b.st.GetLease(ctx, req.Key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease after its release: %v, want ErrNotFound", err)
	}
}

func TestLastAtEnd(t *testing.T) {
	t.Parallel()
	a, rel1, c, rel2, e := &writeReq{}, &writeReq{last: true}, &writeReq{}, &writeReq{last: true}, &writeReq{}
	got := lastAtEnd([]*writeReq{a, rel1, c, rel2, e})
	want := []*writeReq{a, c, e, rel1, rel2}
	if len(got) != len(want) {
		t.Fatalf("%d writes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("write %d is not the one wanted: the releases go last, each part in its order", i)
		}
	}
}
