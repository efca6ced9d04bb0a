package sqlite

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// dumpSteps prints what steps leave in the store, times of writing aside:
// the session rows, every message and every usage row. Usage rows are in
// their order within each session: a merged step's are inserted before
// those of steps of other sessions queued between, so their ids
// interleave differently.
func dumpSteps(t *testing.T, b *testBundle) string {
	t.Helper()
	var out strings.Builder
	for _, q := range []string{
		`SELECT id, title, status, created_at, last_seq, input_tokens, output_tokens, cache_read_tokens,
			cache_write_tokens, cost_usd, cost_known FROM sessions ORDER BY id`,
		`SELECT session_id, seq, role, body, 0, 0, 0, 0, 0, 0, 0 FROM messages ORDER BY session_id, seq`,
		`SELECT session_id, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
			cost_usd, cost_known, created_at, 0, 0 FROM usage ORDER BY session_id, id`,
	} {
		rows, err := b.st.read.QueryContext(b.ctx, q)
		must(t, err)
		for rows.Next() {
			v := make([]any, 11)
			p := make([]any, len(v))
			for i := range v {
				p[i] = &v[i]
			}
			must(t, rows.Scan(p...))
			for _, x := range v {
				if f, ok := x.(float64); ok { // every bit of a cost
					x = fmt.Sprintf("%x", f)
				}
				fmt.Fprintf(&out, "%v|", x)
			}
			out.WriteString("\n")
		}
		must(t, rows.Err())
		must(t, rows.Close())
	}
	return out.String()
}

// checkTouched fails unless every session's updated_at is at least the
// time of its last step, as each step's write leaves it (the messages'
// created_at is their step's time).
func checkTouched(t *testing.T, b *testBundle) {
	t.Helper()
	rows, err := b.st.read.QueryContext(b.ctx, `SELECT s.id, s.updated_at, MAX(m.created_at)
		FROM sessions s JOIN messages m ON m.session_id = s.id GROUP BY s.id`)
	must(t, err)
	defer rows.Close()
	for rows.Next() {
		var id string
		var updated, last int64
		must(t, rows.Scan(&id, &updated, &last))
		if updated < last {
			t.Fatalf("session %s: updated_at %d before its last step's %d", id, updated, last)
		}
	}
	must(t, rows.Err())
}

// TestStepsOfASessionMergeInOneTransaction: a node's answer and its tool
// results, queued with a transition and another session's step between
// them, are written as one step: two statements fewer than with a write
// between them that may touch anything, and the same rows.
func TestStepsOfASessionMergeInOneTransaction(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	batch := func(barrier bool) (statements int64, dump string) {
		b := setup(t)
		must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1"}))
		node := store.Node{RunID: "r1", ID: 1, Kind: "goal", State: "pending"}
		must(t, b.st.Commit(b.ctx, nil, node))
		must(t, b.st.CreateSession(b.ctx, store.Session{ID: "other", CreatedAt: at}))
		tx0 := func() int64 { n, _ := b.st.WriteStats(); return n }()
		s0 := b.st.Statements()
		g := holdWriter(t, b)
		answer := b.st.QueueStep(b.ctx, store.Step{Create: &store.Session{ID: "a", Title: "node", CreatedAt: at},
			Messages: []llm.Message{llm.UserText("prompt"), {Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("answer")}}},
			Usage:    &store.UsageRecord{Model: "m", Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}, CostUSD: 0.1, CostKnown: true, At: at}})
		<-g.enqueued
		node.State = "active"
		transition := b.st.CommitAsync(b.ctx, nil, node)
		<-g.enqueued
		other := b.st.QueueStep(b.ctx, store.Step{SessionID: "other", Messages: []llm.Message{llm.UserText("hello")}})
		<-g.enqueued
		if barrier { // a write that could touch any row, with no statement of its own
			done := b.st.w.enqueue(func(*wtx) error { return nil })
			<-g.enqueued
			defer func() { must(t, done()) }()
		}
		results := b.st.QueueStep(b.ctx, store.Step{SessionID: "a", Messages: []llm.Message{llm.UserText("result")}, Status: store.SessionIdle})
		<-g.enqueued
		g.open(t)
		// The last wait leads the whole queue as one batch.
		for i, w := range []func() (int64, error){results, other, answer} {
			last, err := w()
			must(t, err)
			if want := []int64{3, 1, 2}[i]; last != want {
				t.Fatalf("barrier %v, step %d: last seq %d, want %d", barrier, i, last, want)
			}
		}
		must(t, transition())
		if tx, _ := b.st.WriteStats(); tx-tx0 != 2 {
			t.Fatalf("barrier %v: %d transactions, want 2 (the held write, the batch)", barrier, tx-tx0)
		}
		// The session row as the two steps' touches leave it, in order.
		var updated, ts1, ts2 int64
		must(t, b.st.read.QueryRowContext(b.ctx, `SELECT updated_at FROM sessions WHERE id = 'a'`).Scan(&updated))
		must(t, b.st.read.QueryRowContext(b.ctx, `SELECT created_at FROM messages WHERE session_id = 'a' AND seq = 2`).Scan(&ts1))
		must(t, b.st.read.QueryRowContext(b.ctx, `SELECT created_at FROM messages WHERE session_id = 'a' AND seq = 3`).Scan(&ts2))
		want := max(ts1, at.UnixNano()+1)
		if want < ts2 {
			want = ts2
		} else {
			want++
		}
		if updated != want {
			t.Fatalf("barrier %v: updated_at %d, want %d", barrier, updated, want)
		}
		checkTouched(t, b)
		return b.st.Statements() - s0, dumpSteps(t, b)
	}
	merged, got := batch(false)
	apart, want := batch(true)
	if got != want {
		t.Fatalf("merged steps left\n%s\nwant\n%s", got, want)
	}
	// Merged: the session row inserted once (not inserted, then
	// updated), the three messages in one statement (not two).
	if merged != apart-2 {
		t.Fatalf("the batch ran %d statements merged and %d apart, want two fewer", merged, apart)
	}
}

// TestMergedStepsAsOneByOne: steps of a few sessions queued into one
// transaction leave what the same steps written one by one leave, and
// each returns the same last seq or error: with usage or not, statuses,
// sessions created by their first step, a create of a taken id (which
// fails the merged transaction and runs it again apart), and writes
// between them that end a merge.
func TestMergedStepsAsOneByOne(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_700_000_000, 0)
	for seed := range uint64(6) {
		rng := rand.New(rand.NewPCG(seed, 38))
		type op struct {
			step    store.Step
			barrier bool
		}
		var ops []op
		created := map[string]bool{}
		for i := range 40 {
			if rng.IntN(8) == 0 {
				ops = append(ops, op{barrier: true})
				continue
			}
			id := fmt.Sprintf("s%d", rng.IntN(4))
			st := store.Step{SessionID: id}
			if !created[id] || seed%2 == 1 && rng.IntN(20) == 0 { // the second time: the id is taken
				st.Create = &store.Session{ID: id, Title: "t" + id, CreatedAt: at}
				created[id] = true
			}
			for j := range rng.IntN(6) {
				st.Messages = append(st.Messages, llm.UserText(fmt.Sprintf("%d.%d", i, j)))
			}
			if rng.IntN(2) == 0 {
				st.Usage = &store.UsageRecord{Model: "m", Usage: llm.Usage{InputTokens: rng.Int64N(100), OutputTokens: rng.Int64N(50),
					CacheReadTokens: rng.Int64N(9), CacheWriteTokens: rng.Int64N(9)}, CostUSD: rng.Float64() / 3, CostKnown: rng.IntN(4) != 0, At: at}
			}
			st.Status = []store.SessionStatus{"", "", store.SessionActive, store.SessionIdle}[rng.IntN(4)]
			if st.Create == nil && len(st.Messages) == 0 && st.Usage == nil && st.Status == "" {
				st.Status = store.SessionIdle // a step that writes nothing is not queued
			}
			ops = append(ops, op{step: st})
		}

		queued, oneByOne := setup(t), setup(t)
		g := holdWriter(t, queued)
		var waits []func() (int64, error)
		for _, o := range ops {
			if o.barrier {
				done := queued.st.w.enqueue(func(*wtx) error { return nil })
				waits = append(waits, func() (int64, error) { return 0, done() })
			} else {
				waits = append(waits, queued.st.QueueStep(queued.ctx, o.step))
			}
			<-g.enqueued
		}
		g.open(t)
		got := make([]string, len(ops))
		for i := len(waits) - 1; i >= 0; i-- {
			last, err := waits[i]()
			got[i] = fmt.Sprint(last, errors.Is(err, store.ErrConflict), err == nil)
		}
		conflict := false
		for i, o := range ops {
			want := "0 false true"
			if !o.barrier {
				last, err := oneByOne.st.SaveStep(oneByOne.ctx, o.step)
				want = fmt.Sprint(last, errors.Is(err, store.ErrConflict), err == nil)
				conflict = conflict || errors.Is(err, store.ErrConflict)
			}
			if got[i] != want {
				t.Fatalf("seed %d, op %d (%+v): queued gave %s, one by one %s", seed, i, o, got[i], want)
			}
		}
		// A create of a taken id (odd seeds) fails the batch's first run,
		// merged, and it runs again apart; the even seeds commit merged.
		if conflict != (seed%2 == 1) || queued.st.w.merged.Load() == 0 {
			t.Fatalf("seed %d: a conflict %v, %d steps merged", seed, conflict, queued.st.w.merged.Load())
		}
		checkTouched(t, queued)
		if a, b := dumpSteps(t, queued), dumpSteps(t, oneByOne); a != b {
			t.Fatalf("seed %d: queued left\n%s\none by one\n%s", seed, a, b)
		}
	}
}
