package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

// nodeFields are the node columns an upsert replaces, in the order
// nodeArgs binds them; run_id, id and created_at precede them and are kept
// by an update. updated_at follows them and strictly increases.
var nodeFields = []string{
	"parent_id", "kind", "spawn", "goal", "prompt", "blocked_by", "returns",
	"context_query", "question", "options", "default_answer", "state", "result",
	"error", "draft", "has_draft", "context", "session_id", "attempts",
	"synthesized", "notice", "call_id", "started_at", "ended_at", "budget_usd", "max_tokens",
	"model", "runner",
}

var (
	nodeColumns = "run_id, id, created_at, " + strings.Join(nodeFields, ", ") + ", updated_at"
	upsertNode  = func() string {
		set := make([]string, 0, len(nodeFields)+1)
		for _, f := range nodeFields {
			set = append(set, f+" = excluded."+f)
		}
		set = append(set, "updated_at = CASE WHEN nodes.updated_at < excluded.updated_at"+
			" THEN excluded.updated_at ELSE nodes.updated_at + 1 END")
		params := make([]string, len(nodeFields)+4)
		for i := range params {
			params[i] = fmt.Sprintf("$%d", i+1)
		}
		return "INSERT INTO nodes (" + nodeColumns + ") VALUES (" + strings.Join(params, ", ") + ")" +
			" ON CONFLICT (run_id, id) DO UPDATE SET " + strings.Join(set, ", ")
	}()
)

// Commit writes one engine transition in one transaction: when run is
// non-nil it replaces the run row (all but ID and CreatedAt), then it
// upserts every node (all but RunID, ID and CreatedAt on update). Every
// record is validated before the transaction starts; a malformed one is
// ErrInvalid, a run or a node's run that does not exist is ErrNotFound,
// and on any error nothing is written. The UpdatedAt of the run and of
// every node becomes now (strictly later than the stored value); a new
// node's zero CreatedAt becomes now. The given UpdatedAt values are
// ignored and run is not modified.
//
// Nodes are written in id order (a node given twice keeps its last
// value), so two commits over overlapping nodes lock them in the same
// order and cannot deadlock each other.
func (s *Store) Commit(ctx context.Context, run *store.Run, nodes ...store.Node) error {
	what, runs, now, writes, err := prepareCommit(run, nodes)
	if err != nil || what == "" {
		return err
	}
	err = s.inBatch(ctx, func(b *pgx.Batch) { queueCommit(b, run, runs, now, writes) },
		func(br pgx.BatchResults) error { return readCommit(br, run, runs) })
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// CommitAsync queues what Commit writes and returns at once; wait returns
// what Commit would have, once the transaction holding the write
// committed (tree.AsyncCommitter). The write keeps its place among this
// store's writes: a write queued after it commits with it or later. ctx
// is not watched; nodes are encoded before it returns, so the caller may
// reuse them.
func (s *Store) CommitAsync(ctx context.Context, run *store.Run, nodes ...store.Node) (wait func() error) {
	what, runs, now, writes, err := prepareCommit(run, nodes)
	if err != nil || what == "" {
		return func() error { return err }
	}
	if run != nil {
		r := *run
		run = &r
	}
	req, err := s.group.enqueue(context.WithoutCancel(ctx),
		func(b *pgx.Batch) { queueCommit(b, run, runs, now, writes) },
		func(br pgx.BatchResults) error { return readCommit(br, run, runs) })
	return func() error { // again, or from several goroutines: the same outcome
		err := err
		if err == nil {
			<-req.done
			err = req.err
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// CommitTx is Commit on the caller's transaction, for the cluster
// dispatcher, which inserts a node's River job in the same transaction as
// the node's transition. It validates and writes exactly as Commit does,
// sends the same change notifications (delivered when tx commits) and
// neither commits nor rolls back tx: on an error the caller must roll it
// back. A deadlock or serialization failure is returned, not retried
// (the caller owns the transaction, so only it can run it again).
func (s *Store) CommitTx(ctx context.Context, tx pgx.Tx, run *store.Run, nodes ...store.Node) error {
	what, runs, now, writes, err := prepareCommit(run, nodes)
	if err != nil || what == "" {
		return err
	}
	if err := commitWrites(ctx, tx, run, runs, now, writes); err != nil {
		return fmt.Errorf("%s: %w", what, dbError(err))
	}
	return nil
}

// commitWrite is one node upsert of a commit.
type commitWrite struct {
	key  store.Node // RunID and ID only
	args []any
}

// prepareCommit validates a commit's records and orders its node writes;
// what is "" when there is nothing to write.
func prepareCommit(run *store.Run, nodes []store.Node) (what string, runs []string, now time.Time, writes []commitWrite, err error) {
	switch {
	case run != nil:
		what = "commit run " + run.ID
	case len(nodes) > 0:
		what = "commit run " + nodes[0].RunID
	default:
		return "", nil, now, nil, nil
	}
	if run != nil {
		if err := run.Validate(); err != nil {
			return what, nil, now, nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	now = time.Now()
	writes = make([]commitWrite, len(nodes))
	runs = []string{} // every run the commit writes
	if run != nil {
		runs = append(runs, run.ID)
	}
	for i, n := range nodes {
		a, err := nodeArgs(n, now)
		if err != nil {
			return what, nil, now, nil, fmt.Errorf("%s: node %d (#%d of the commit): %w", what, n.ID, i+1, err)
		}
		writes[i] = commitWrite{key: store.Node{RunID: n.RunID, ID: n.ID}, args: a}
		if !slices.Contains(runs, n.RunID) {
			runs = append(runs, n.RunID)
		}
	}
	slices.SortStableFunc(writes, func(a, b commitWrite) int {
		return cmp.Or(strings.Compare(a.key.RunID, b.key.RunID), cmp.Compare(a.key.ID, b.key.ID))
	})
	return what, runs, now, writes, nil
}

// commitWrites sends a commit's statements on tx.
func commitWrites(ctx context.Context, tx pgx.Tx, run *store.Run, runs []string, now time.Time, writes []commitWrite) error {
	var batch pgx.Batch
	queueCommit(&batch, run, runs, now, writes)
	br := tx.SendBatch(ctx, &batch)
	err := readCommit(br, run, runs)
	return errors.Join(err, closeUnlessFailed(br, err))
}

// queueCommit queues a commit's statements: which runs exist, the run
// row, the node upserts, the notifications (delivered at commit, see
// feed.go). Every refusal is a failing statement, so that the batch can be
// a transaction of its own (inBatch): a missing run fails the run update
// (updateRunChecked) or a node's foreign key, a complete run the run
// update. A new batch per attempt: a batch is bound to the connection it
// was sent on.
func queueCommit(batch *pgx.Batch, run *store.Run, runs []string, now time.Time, writes []commitWrite) {
	batch.Queue(existingRuns, runs)
	if run != nil {
		batch.Queue(updateRunChecked, updateRunArgs(run, now.UnixNano())...)
	}
	for _, w := range writes {
		batch.Queue(upsertNode, w.args...)
	}
	for _, id := range runs {
		batch.Queue(notifyRun, id)
	}
}

// readCommit reads the first results of a Commit's batch: ErrNotFound
// for a missing run, ErrConflict when the run row did not change (it is
// complete). The results are read in order; on any failure the
// transaction rolls back, the statements after it included.
func readCommit(br pgx.BatchResults, run *store.Run, runs []string) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	if err := missingRun(rows, runs); err != nil {
		return err
	}
	if run == nil {
		return nil
	}
	if _, err := br.Exec(); err != nil {
		if refused(err) {
			return fmt.Errorf("run %s is complete, refusing to mark it %s: %w", run.ID, run.Status, store.ErrConflict)
		}
		return err
	}
	return nil
}

// closeUnlessFailed closes br, returning its error (a later statement's)
// only when the results read so far were fine: after a failure the rest
// of the batch fails for the same reason and would only repeat it.
func closeUnlessFailed(br pgx.BatchResults, failed error) error {
	err := br.Close()
	if failed != nil {
		return nil
	}
	return err
}

// nodeArgs validates n and returns the values of nodeColumns for it.
func nodeArgs(n store.Node, now time.Time) ([]any, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	created, err := nanos(n.CreatedAt, now)
	if err != nil {
		return nil, fmt.Errorf("created_at: %w", err)
	}
	started, err := nullableNanos(n.StartedAt)
	if err != nil {
		return nil, fmt.Errorf("started_at: %w", err)
	}
	ended, err := nullableNanos(n.EndedAt)
	if err != nil {
		return nil, fmt.Errorf("ended_at: %w", err)
	}
	// nil and empty slices encode as null and [] and decode back as they
	// were, so both round-trip exactly.
	blockedBy, err := encodeJSON(n.BlockedBy)
	if err != nil {
		return nil, fmt.Errorf("encode blocked_by: %w", err)
	}
	options, err := encodeJSON(n.Options)
	if err != nil {
		return nil, fmt.Errorf("encode options: %w", err)
	}
	hasDraft := int32(0)
	if n.HasDraft {
		hasDraft = 1
	}
	return []any{
		n.RunID, n.ID, created,
		n.ParentID, string(n.Kind), n.Spawn, n.Goal, n.Prompt, blockedBy, n.Returns,
		n.ContextQuery, n.Question, options, n.Default, string(n.State), n.Result,
		n.Error, n.Draft, hasDraft, n.Context, n.SessionID, n.Attempts,
		n.Synthesized, n.Notice, n.CallID, started, ended, n.BudgetUSD, n.MaxTokens,
		n.Model, n.Runner,
		now.UnixNano(),
	}, nil
}

// Nodes returns the run's nodes ordered by id; ErrNotFound for an unknown
// run.
func (s *Store) Nodes(ctx context.Context, runID string) ([]store.Node, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+nodeColumns+` FROM nodes WHERE run_id = $1 ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []store.Node{}
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		// Runs are never deleted, so checking after the query is exact.
		if err := requireRuns(ctx, s.pool, []string{runID}); err != nil {
			return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
		}
	}
	return out, nil
}

// GetNode returns node id of the run, ErrNotFound if there is none.
func (s *Store) GetNode(ctx context.Context, runID string, id int64) (store.Node, error) {
	n, err := scanNode(s.pool.QueryRow(ctx,
		`SELECT `+nodeColumns+` FROM nodes WHERE run_id = $1 AND id = $2`, runID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Node{}, fmt.Errorf("get node %d of run %s: %w", id, runID, store.ErrNotFound)
	}
	if err != nil {
		return store.Node{}, fmt.Errorf("get node %d of run %s: %w", id, runID, err)
	}
	return n, nil
}

func scanNode(row pgx.Row) (store.Node, error) {
	var (
		n                  store.Node
		blockedBy, options string
		hasDraft           int32
		created, updated   int64
		started, ended     *int64
	)
	err := row.Scan(&n.RunID, &n.ID, &created,
		&n.ParentID, &n.Kind, &n.Spawn, &n.Goal, &n.Prompt, &blockedBy, &n.Returns,
		&n.ContextQuery, &n.Question, &options, &n.Default, &n.State, &n.Result,
		&n.Error, &n.Draft, &hasDraft, &n.Context, &n.SessionID, &n.Attempts,
		&n.Synthesized, &n.Notice, &n.CallID, &started, &ended, &n.BudgetUSD, &n.MaxTokens,
		&n.Model, &n.Runner,
		&updated)
	if err != nil {
		return store.Node{}, err
	}
	if err := json.Unmarshal([]byte(blockedBy), &n.BlockedBy); err != nil {
		return store.Node{}, fmt.Errorf("decode blocked_by of node %d: %w", n.ID, err)
	}
	if err := json.Unmarshal([]byte(options), &n.Options); err != nil {
		return store.Node{}, fmt.Errorf("decode options of node %d: %w", n.ID, err)
	}
	n.HasDraft = hasDraft != 0
	n.CreatedAt = fromNanos(created)
	n.UpdatedAt = fromNanos(updated)
	n.StartedAt = nullableTime(started)
	n.EndedAt = nullableTime(ended)
	return n, nil
}
