package sqlite

import (
	"database/sql"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// nodeVals is what a write of a node binds, typed: the node as the caller
// gave it, with its slices and times encoded into the fields beside it
// and cleared (nothing the caller may reuse is kept), so that nodeRows can
// keep it and updateChanged compare it column by column. Values are boxed
// for the driver only where they are bound: a transition's update binds
// the few columns that changed, where a []any of every column boxed
// about twenty values per write and kept them all for every pending node.
type nodeVals struct {
	n                store.Node // BlockedBy, Options and the times cleared
	created          int64
	blocked, options string // JSON: null for nil, [] for empty
	hasDraft         int64
	started, ended   sql.NullInt64
	updated          int64 // the write's time, its updated_at
}

// newNodeVals validates n and returns its values for a write at now.
func newNodeVals(n store.Node, now time.Time) (*nodeVals, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	v := &nodeVals{hasDraft: boolInt(n.HasDraft), updated: now.UnixNano(), options: "null"}
	var err error
	if v.created, err = nanos(n.CreatedAt, now); err != nil {
		return nil, fmt.Errorf("created_at: %w", err)
	}
	if v.started, err = nullableNanos(n.StartedAt); err != nil {
		return nil, fmt.Errorf("started_at: %w", err)
	}
	if v.ended, err = nullableNanos(n.EndedAt); err != nil {
		return nil, fmt.Errorf("ended_at: %w", err)
	}
	// nil and empty slices encode as null and [] and decode back as they
	// were, so both round-trip exactly.
	v.blocked = encodeIDs(n.BlockedBy)
	if n.Options != nil {
		if v.options, err = encodeJSON(n.Options); err != nil {
			return nil, fmt.Errorf("encode options: %w", err)
		}
	}
	n.BlockedBy, n.Options, n.StartedAt, n.EndedAt = nil, nil, nil, nil
	n.CreatedAt, n.UpdatedAt = time.Time{}, time.Time{}
	v.n = n
	return v, nil
}

func (v *nodeVals) key() nodeKey { return nodeKey{run: v.n.RunID, id: v.n.ID} }

// args are the values of nodeColumns, each of a type the driver takes as
// it is (string, int64, float64, nil): the writer binds them without
// database/sql's reflection.
func (v *nodeVals) args() []any {
	args := make([]any, 0, len(nodeFields)+4)
	args = append(args, v.n.RunID, v.n.ID, v.created)
	for i := range nodeFields {
		args = append(args, v.field(i))
	}
	return append(args, v.updated)
}

// field is the value of nodeFields[i] to bind.
func (v *nodeVals) field(i int) any {
	n := &v.n
	switch i {
	case 0:
		return n.ParentID
	case 1:
		return string(n.Kind)
	case 2:
		return n.Spawn
	case 3:
		return n.Goal
	case 4:
		return n.Prompt
	case 5:
		return v.blocked
	case 6:
		return n.Returns
	case 7:
		return n.ContextQuery
	case 8:
		return n.Question
	case 9:
		return v.options
	case 10:
		return n.Default
	case 11:
		return string(n.State)
	case 12:
		return n.Result
	case 13:
		return n.Error
	case 14:
		return n.Draft
	case 15:
		return v.hasDraft
	case 16:
		return n.Context
	case 17:
		return n.SessionID
	case 18:
		return int64(n.Attempts)
	case 19:
		return int64(n.Synthesized)
	case 20:
		return n.Notice
	case 21:
		return n.CallID
	case 22:
		return nullInt(v.started)
	case 23:
		return nullInt(v.ended)
	case 24:
		return n.BudgetUSD
	case 25:
		return n.MaxTokens
	case 26:
		return n.Model
	case 27:
		return n.Runner
	}
	panic(fmt.Sprintf("sqlite: node field %d of %d", i, len(nodeFields)))
}

// same reports whether nodeFields[i] has the same value in v and p, as
// field(i) == p.field(i) would, without boxing either
// (TestNodeValsSame).
func (v *nodeVals) same(p *nodeVals, i int) bool {
	a, b := &v.n, &p.n
	switch i {
	case 0:
		return a.ParentID == b.ParentID
	case 1:
		return a.Kind == b.Kind
	case 2:
		return a.Spawn == b.Spawn
	case 3:
		return a.Goal == b.Goal
	case 4:
		return a.Prompt == b.Prompt
	case 5:
		return v.blocked == p.blocked
	case 6:
		return a.Returns == b.Returns
	case 7:
		return a.ContextQuery == b.ContextQuery
	case 8:
		return a.Question == b.Question
	case 9:
		return v.options == p.options
	case 10:
		return a.Default == b.Default
	case 11:
		return a.State == b.State
	case 12:
		return a.Result == b.Result
	case 13:
		return a.Error == b.Error
	case 14:
		return a.Draft == b.Draft
	case 15:
		return v.hasDraft == p.hasDraft
	case 16:
		return a.Context == b.Context
	case 17:
		return a.SessionID == b.SessionID
	case 18:
		return a.Attempts == b.Attempts
	case 19:
		return a.Synthesized == b.Synthesized
	case 20:
		return a.Notice == b.Notice
	case 21:
		return a.CallID == b.CallID
	case 22:
		return v.started == p.started
	case 23:
		return v.ended == p.ended
	case 24:
		return a.BudgetUSD == b.BudgetUSD
	case 25:
		return a.MaxTokens == b.MaxTokens
	case 26:
		return a.Model == b.Model
	case 27:
		return a.Runner == b.Runner
	}
	panic(fmt.Sprintf("sqlite: node field %d of %d", i, len(nodeFields)))
}
