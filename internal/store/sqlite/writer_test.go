package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// gated holds the writer's lead in a write that waits for release, so the
// writes started meanwhile queue behind it in a known order and run as one
// batch once it is released.
type gated struct {
	b        *testBundle
	enqueued chan struct{}
	release  chan struct{}
	done     chan error
}

func holdWriter(t *testing.T, b *testBundle) *gated {
	t.Helper()
	g := &gated{b: b, enqueued: make(chan struct{}, 64), release: make(chan struct{}), done: make(chan error, 1)}
	b.st.w.enqueued = g.enqueued
	started := make(chan struct{})
	go func() {
		g.done <- b.st.inTx(b.ctx, func(tx *wtx) error {
			close(started)
			<-g.release
			_, err := tx.ExecContext(b.ctx, `UPDATE sessions SET title = 'gate' WHERE id = 'gate'`)
			return err
		})
	}()
	<-g.enqueued
	<-started
	return g
}

// queue starts write on its own goroutine and returns once it is queued;
// the returned channel gets its result.
func (g *gated) queue(write func() error) <-chan error {
	res := make(chan error, 1)
	go func() { res <- write() }()
	<-g.enqueued
	return res
}

// open releases the held write and waits for it.
func (g *gated) open(t *testing.T) {
	t.Helper()
	close(g.release)
	must(t, <-g.done)
}

func mustMessages(t *testing.T, b *testBundle, id string, want ...string) {
	t.Helper()
	recs, err := b.st.Messages(b.ctx, id, 0)
	must(t, err)
	var got []string
	for _, r := range recs {
		got = append(got, r.Message.Text())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("messages of %s = %q, want %q", id, got, want)
	}
}

func TestGroupCommit(t *testing.T) {
	t.Parallel()

	t.Run("queued writes share one transaction and a failed one keeps the others", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		tx0, _ := b.st.WriteStats()
		g := holdWriter(t, b)
		first := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("one")); return err })
		missing := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "nope", llm.UserText("x")); return err })
		taken := g.queue(func() error { return b.st.CreateSession(b.ctx, store.Session{ID: "s1"}) })
		created := g.queue(func() error { return b.st.CreateSession(b.ctx, store.Session{ID: "s2"}) })
		second := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("two")); return err })
		g.open(t)
		must(t, <-first)
		must(t, <-created)
		must(t, <-second)
		if err := <-missing; !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("append to an unknown session: %v, want ErrNotFound", err)
		}
		if err := <-taken; !errors.Is(err, store.ErrConflict) {
			t.Fatalf("create a taken id: %v, want ErrConflict", err)
		}
		mustMessages(t, b, "s1", "one", "two")
		if _, err := b.st.GetSession(b.ctx, "s2"); err != nil {
			t.Fatalf("session created in the batch: %v", err)
		}
		// The batch ran with no savepoints first; the failures rolled it
		// back, and it ran again with a savepoint per write.
		if tx, writes := b.st.WriteStats(); tx-tx0 != 3 || writes != 12 {
			t.Fatalf("transactions, writes = %d, %d; want 3 (the held write, the batch twice), 12", tx-tx0, writes)
		}
	})

	t.Run("a batch in which nothing fails is one transaction", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		tx0, w0 := b.st.WriteStats()
		g := holdWriter(t, b)
		first := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("one")); return err })
		created := g.queue(func() error { return b.st.CreateSession(b.ctx, store.Session{ID: "s2"}) })
		second := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("two")); return err })
		g.open(t)
		must(t, <-first)
		must(t, <-created)
		must(t, <-second)
		mustMessages(t, b, "s1", "one", "two")
		if tx, writes := b.st.WriteStats(); tx-tx0 != 2 || writes-w0 != 4 {
			t.Fatalf("transactions, writes = %d, %d; want 2 (the held write, the batch), 4", tx-tx0, writes-w0)
		}
	})

	t.Run("a write that ends the transaction has the others run again alone", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		tx0, _ := b.st.WriteStats()
		g := holdWriter(t, b)
		first := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("one")); return err })
		// As SQLITE_FULL or an I/O error would: the transaction is gone,
		// with the savepoints of the writes before this one.
		breaker := errors.New("broke the transaction")
		broke := g.queue(func() error {
			return b.st.inTx(b.ctx, func(tx *wtx) error {
				if _, err := tx.ExecContext(b.ctx, `ROLLBACK`); err != nil {
					return err
				}
				return breaker
			})
		})
		second := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("two")); return err })
		g.open(t)
		must(t, <-first)
		must(t, <-second)
		if err := <-broke; !errors.Is(err, breaker) {
			t.Fatalf("the breaking write: %v, want its own error", err)
		}
		mustMessages(t, b, "s1", "one", "two")
		if tx, _ := b.st.WriteStats(); tx-tx0 != 6 {
			t.Fatalf("transactions = %d, want 6 (the held write, the batch without and with savepoints, three alone)", tx-tx0)
		}
	})

	t.Run("a panic in a batched write reaches its caller only", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		g := holdWriter(t, b)
		first := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("one")); return err })
		panicked := g.queue(func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return b.st.inTx(b.ctx, func(tx *wtx) error {
				if _, err := tx.ExecContext(b.ctx, `UPDATE sessions SET title = 'lost' WHERE id = 's1'`); err != nil {
					return err
				}
				panic("boom")
			})
		})
		second := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("two")); return err })
		g.open(t)
		must(t, <-first)
		must(t, <-second)
		if err := <-panicked; err == nil || err.Error() != "panic: boom" {
			t.Fatalf("panicking write: %v, want its panic", err)
		}
		mustMessages(t, b, "s1", "one", "two")
		sess, err := b.st.GetSession(b.ctx, "s1")
		must(t, err)
		if sess.Title == "lost" {
			t.Fatal("the panicking write's statement was committed")
		}
	})

	t.Run("a write whose context ends while queued is not run", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		g := holdWriter(t, b)
		ctx, cancel := context.WithCancel(b.ctx)
		abandoned := g.queue(func() error { _, err := b.st.AppendMessages(ctx, "s1", llm.UserText("never")); return err })
		kept := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("kept")); return err })
		cancel()
		if err := <-abandoned; !errors.Is(err, context.Canceled) {
			t.Fatalf("abandoned write: %v, want context.Canceled", err)
		}
		g.open(t)
		must(t, <-kept)
		mustMessages(t, b, "s1", "kept")
	})

	t.Run("close runs the queued writes and refuses later ones", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		g := holdWriter(t, b)
		queued := g.queue(func() error { _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("queued")); return err })
		closed := make(chan error, 1)
		go func() { closed <- b.st.Close() }()
		g.open(t)
		must(t, <-queued)
		must(t, <-closed)
		if _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("late")); !errors.Is(err, errClosed) {
			t.Fatalf("write after close: %v, want errClosed", err)
		}
		b.st = openAt(t, b.path)
		mustMessages(t, b, "s1", "queued")
	})
}

// TestGroupCommitFlood has many goroutines write at once, some of the
// writes failing, and checks that every successful write is durable, in
// order, and that no failure touched another write. Run it with -race.
func TestGroupCommitFlood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const writers, rounds = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		id := fmt.Sprintf("s%d", i)
		wg.Go(func() {
			if err := b.st.CreateSession(b.ctx, store.Session{ID: id}); err != nil {
				errs <- err
				return
			}
			for r := range rounds {
				var err error
				switch r % 4 {
				case 1: // fails: unknown session
					if _, e := b.st.AppendMessages(b.ctx, id+"-missing", llm.UserText("x")); !errors.Is(e, store.ErrNotFound) {
						err = fmt.Errorf("append to unknown session: %v", e)
					}
				case 2: // fails: taken id
					if e := b.st.CreateSession(b.ctx, store.Session{ID: id}); !errors.Is(e, store.ErrConflict) {
						err = fmt.Errorf("create taken session: %v", e)
					}
				default:
					_, err = b.st.SaveStep(b.ctx, store.Step{SessionID: id,
						Messages: []llm.Message{llm.UserText(fmt.Sprint(r))},
						Usage:    &store.UsageRecord{Model: "m", Usage: llm.Usage{InputTokens: 1}}})
				}
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", id, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range writers {
		id := fmt.Sprintf("s%d", i)
		var want []string
		for r := range rounds {
			if r%4 == 0 || r%4 == 3 {
				want = append(want, fmt.Sprint(r))
			}
		}
		mustMessages(t, b, id, want...)
		sess, err := b.st.GetSession(b.ctx, id)
		must(t, err)
		if sess.Usage.InputTokens != int64(len(want)) {
			t.Fatalf("%s input tokens = %d, want %d", id, sess.Usage.InputTokens, len(want))
		}
	}
	tx, writes := b.st.WriteStats()
	t.Logf("%d writes in %d transactions", writes, tx)
}

func TestCommitAsync(t *testing.T) {
	t.Parallel()

	t.Run("a queued commit keeps its place before later writes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}))
		g := holdWriter(t, b)
		node := store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "active"}
		wait := b.st.CommitAsync(b.ctx, nil, node)
		<-g.enqueued
		node.State = "complete"
		later := g.queue(func() error { return b.st.Commit(b.ctx, nil, node) })
		g.open(t)
		must(t, <-later)
		must(t, wait())
		n, err := b.st.GetNode(b.ctx, "r1", 1)
		must(t, err)
		if n.State != "complete" {
			t.Fatalf("state = %s, want the later write's complete", n.State)
		}
	})

	t.Run("a queued commit nobody waits for yet is run by the next write", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}))
		wait := b.st.CommitAsync(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "active"})
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		if _, err := b.st.GetNode(b.ctx, "r1", 1); err != nil {
			t.Fatalf("the queued commit was not run with the later write: %v", err)
		}
		must(t, wait())
	})

	t.Run("wait runs a queued commit and reports its errors", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		wait := b.st.CommitAsync(b.ctx, nil, store.Node{RunID: "nope", ID: 1, Kind: "goal", Goal: "g", State: "active"})
		if err := wait(); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("commit to an unknown run: %v, want ErrNotFound", err)
		}
		if err := b.st.CommitAsync(b.ctx, nil, store.Node{RunID: "r1", ID: 0})(); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("invalid node: %v, want ErrInvalid", err)
		}
	})

	t.Run("close runs queued commits", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}))
		wait := b.st.CommitAsync(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "active"})
		must(t, b.st.Close())
		must(t, wait())
		b.st = openAt(t, b.path)
		if _, err := b.st.GetNode(b.ctx, "r1", 1); err != nil {
			t.Fatalf("the queued commit was lost on close: %v", err)
		}
	})
}

// TestCommitAsyncFlood mixes queued commits, waited for later, with
// synchronous writes from many goroutines: every commit is durable and
// each goroutine's transitions land in the order it queued them.
func TestCommitAsyncFlood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}))
	const writers, rounds = 8, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		id := int64(i + 1)
		wg.Go(func() {
			var waits []func() error
			for r := range rounds {
				n := store.Node{RunID: "r1", ID: id, Kind: "goal", Goal: "g", State: "active", Attempts: r}
				waits = append(waits, b.st.CommitAsync(b.ctx, nil, n))
				if r%3 == 2 { // wait for some at once, others later
					for _, w := range waits {
						if err := w(); err != nil {
							errs <- err
							return
						}
					}
					waits = nil
				}
			}
			for _, w := range waits {
				if err := w(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range writers {
		n, err := b.st.GetNode(b.ctx, "r1", int64(i+1))
		must(t, err)
		if n.Attempts != rounds-1 {
			t.Fatalf("node %d attempts = %d, want the last queued %d", n.ID, n.Attempts, rounds-1)
		}
	}
}

// TestWriteRowScan: rows read inside a write transaction (on the driver's
// connection, not through database/sql) scan like database/sql's rows.
func TestWriteRowScan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.inTx(b.ctx, func(tx *wtx) error {
		var (
			s, n   string
			blob   []byte
			i      int
			i64    int64
			f      float64
			yes    bool
			null   sql.NullString
			absent int64
		)
		if err := tx.QueryRowContext(b.ctx, `SELECT 'text', 42, x'0102', 7, ?, 2.5, 1, NULL`, int64(-3)).
			Scan(&s, &n, &blob, &i, &i64, &f, &yes, &null); err != nil {
			return err
		}
		if s != "text" || n != "42" || string(blob) != "\x01\x02" || i != 7 || i64 != -3 || f != 2.5 || !yes || null.Valid {
			t.Errorf("scanned %q %q %x %d %d %v %v %+v", s, n, blob, i, i64, f, yes, null)
		}
		if err := tx.QueryRowContext(b.ctx, `SELECT 1 FROM sessions WHERE id = 'none'`).Scan(&absent); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("no row: %v, want sql.ErrNoRows", err)
		}
		if err := tx.QueryRowContext(b.ctx, `SELECT 1, 2`).Scan(&absent); err == nil {
			t.Error("two columns into one destination: no error")
		}
		if err := tx.QueryRowContext(b.ctx, `SELECT 'x'`).Scan(&absent); err == nil {
			t.Error("text into an int64: no error")
		}
		if err := tx.QueryRowContext(b.ctx, `SELECT nope FROM nowhere`).Scan(&absent); err == nil {
			t.Error("a query that cannot be prepared: no error")
		}
		return nil
	}))
}

// TestMessageSeqsAcrossStores: a store numbers a session's messages from
// the last_seq it committed, unless another store (another process)
// appended meanwhile; then it numbers after those.
func TestMessageSeqsAcrossStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := openAt(t, b.path)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	for i, tc := range []struct {
		st   *Store
		text string
		want int64
	}{
		{b.st, "one", 1}, {b.st, "two", 2}, {other, "three", 3}, {b.st, "four", 4}, {b.st, "five", 5},
	} {
		last, err := tc.st.AppendMessages(b.ctx, "s1", llm.UserText(tc.text))
		must(t, err)
		if last != tc.want {
			t.Fatalf("append %d (%q): last seq %d, want %d", i, tc.text, last, tc.want)
		}
	}
	// A step with a new session numbers from 1 without reading it back.
	last, err := b.st.SaveStep(b.ctx, store.Step{Create: &store.Session{ID: "s2"}, Messages: []llm.Message{llm.UserText("a"), llm.UserText("b")}})
	must(t, err)
	if last != 2 {
		t.Fatalf("step creating s2: last seq %d, want 2", last)
	}
	mustMessages(t, b, "s1", "one", "two", "three", "four", "five")
	mustMessages(t, b, "s2", "a", "b")
}

// TestWriterTakesANewConnection: a write that finds the writer's
// connection gone fails with that error, and the next write runs on a new
// connection.
func TestWriterTakesANewConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	must(t, b.st.w.conn.Close()) // the writer is idle: nobody holds it
	if _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("lost")); !errors.Is(err, sql.ErrConnDone) {
		t.Fatalf("write on a closed connection: %v, want sql.ErrConnDone", err)
	}
	if _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("kept")); err != nil {
		t.Fatalf("write after the connection was dropped: %v", err)
	}
	mustMessages(t, b, "s1", "kept")
}

// TestStepSeqsInOneTransaction: steps of one session queued together
// share a transaction and number their messages on from each other; a
// step whose write was rolled back after it numbered its messages leaves
// nothing the next step trusts.
func TestStepSeqsInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	txs0, _ := b.st.WriteStats()
	waits := []func() (int64, error){
		b.st.QueueStep(b.ctx, store.Step{Create: &store.Session{ID: "s1"}, Messages: []llm.Message{llm.UserText("one"), llm.UserText("two")}}),
		b.st.QueueStep(b.ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText("three")}}),
		b.st.QueueStep(b.ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText("four"), llm.UserText("five")}}),
	}
	// The last wait runs the whole queue, as a node's transition does.
	for i := len(waits) - 1; i >= 0; i-- {
		last, err := waits[i]()
		must(t, err)
		if want := []int64{2, 3, 5}[i]; last != want {
			t.Fatalf("step %d: last seq %d, want %d", i, last, want)
		}
	}
	if txs, _ := b.st.WriteStats(); txs-txs0 != 1 {
		t.Fatalf("the three steps took %d transactions, want 1", txs-txs0)
	}
	mustMessages(t, b, "s1", "one", "two", "three", "four", "five")

	// A message row the session does not count makes the next step's
	// second insert fail after its session update: the step rolls back.
	must(t, b.writeExec(`INSERT INTO messages (session_id, seq, role, body, created_at) VALUES ('s1', 7, 'user', '{}', 0)`))
	if _, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("six"), llm.UserText("seven")); err == nil {
		t.Fatal("a step onto a taken seq succeeded")
	}
	must(t, b.writeExec(`DELETE FROM messages WHERE session_id = 's1' AND seq = 7`))
	last, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("six"))
	must(t, err)
	if last != 6 {
		t.Fatalf("the step after a rolled-back one: last seq %d, want 6", last)
	}
	mustMessages(t, b, "s1", "one", "two", "three", "four", "five", "six")
}

// TestStepCreatingItsSession: a step that creates its session inserts the
// row as the step leaves it, which must be the row CreateSession and then
// the same step give: totals, status, cost, times, and the messages
// numbered from 1 (more than one insert statement holds).
func TestStepCreatingItsSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	later := time.Now().Add(time.Hour).UTC() // updated_at ahead of the step's clock
	for _, status := range []store.SessionStatus{"", store.SessionIdle} {
		var msgs []llm.Message
		for i := range 6 {
			msgs = append(msgs, llm.UserText(fmt.Sprintf("message %d", i+1)))
		}
		sess := func(id string) store.Session {
			return store.Session{ID: id, Title: "t", Model: "m", Workspace: "w", CreatedAt: later, UpdatedAt: later, RunID: "r", NodeID: 3}
		}
		step := func(id string) store.Step {
			return store.Step{SessionID: id, Messages: msgs, Status: status, Usage: &store.UsageRecord{
				Model: "m", Usage: llm.Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}, CostUSD: 0.5, At: later}}
		}
		one, two := "created-by-step"+string(status), "created-first"+string(status)
		st := step(one)
		st.Create = ptr(sess(one))
		last, err := b.st.SaveStep(b.ctx, st)
		must(t, err)
		must(t, b.st.CreateSession(b.ctx, sess(two)))
		last2, err := b.st.SaveStep(b.ctx, step(two))
		must(t, err)
		if last != 6 || last2 != 6 {
			t.Fatalf("last seqs %d and %d, want 6", last, last2)
		}
		got, err := b.st.GetSession(b.ctx, one)
		must(t, err)
		want, err := b.st.GetSession(b.ctx, two)
		must(t, err)
		got.ID = want.ID
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Fatalf("status %q: the step's session\n%+v\nwant\n%+v", status, got, want)
		}
		recs, err := b.st.Messages(b.ctx, one, 0)
		must(t, err)
		for i, r := range recs {
			if r.Seq != int64(i+1) || r.Message.Text() != msgs[i].Text() {
				t.Fatalf("message %d: seq %d %q", i, r.Seq, r.Message.Text())
			}
		}
		if len(recs) != len(msgs) {
			t.Fatalf("%d messages, want %d", len(recs), len(msgs))
		}
	}
}

func ptr[T any](v T) *T { return &v }
