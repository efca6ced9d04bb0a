package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// Pending interactions across machines. The worker driving a cluster run
// publishes the run's pending interactions (PublishPending) whenever they
// change; a front end on any machine reads them (PendingOf) when the run's
// change feed wakes it, and resolves one with a control request
// (OpResolve, ResolveText).

// OpResolve resolves a pending interaction; the request's Text is
// ResolveText's.
const OpResolve = "resolve"

// resolution is the Text of an OpResolve request.
type resolution struct {
	ID       string         `json:"id"`
	Response agent.Response `json:"response"`
}

// ResolveText is the Text of a request resolving interaction id with r.
func ResolveText(id string, r agent.Response) string {
	b, _ := json.Marshal(resolution{ID: id, Response: r}) // plain structs: cannot fail
	return string(b)
}

// ParseResolve reads the Text of an OpResolve request.
func ParseResolve(text string) (id string, r agent.Response, err error) {
	var res resolution
	if err := json.Unmarshal([]byte(text), &res); err != nil || res.ID == "" {
		return "", agent.Response{}, fmt.Errorf("malformed resolution %q", text)
	}
	// tool.Approval has no JSON tags: an unedited call's nil UpdatedInput
	// comes back as the raw "null", which would read as an edit.
	if a := res.Response.Approval; a != nil && string(a.UpdatedInput) == "null" {
		a.UpdatedInput = nil
	}
	return res.ID, res.Response, nil
}

// PublishPending replaces run's published pending interactions with ins
// (oldest first) and wakes the run's followers, in one transaction.
func PublishPending(ctx context.Context, st *postgres.Store, run string, ins []agent.Interaction) error {
	err := pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM pending_interactions WHERE run_id = $1`, run); err != nil {
			return err
		}
		for i, in := range ins {
			body, err := json.Marshal(in)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO pending_interactions (run_id, id, seq, body) VALUES ($1, $2, $3, $4)`,
				run, in.ID, i, string(body)); err != nil {
				return err
			}
		}
		return postgres.NotifyRunTx(ctx, tx, run)
	})
	if err != nil {
		return fmt.Errorf("publish pending interactions of run %s: %w", run, err)
	}
	return nil
}

// PendingOf returns run's published pending interactions, oldest first.
func PendingOf(ctx context.Context, st *postgres.Store, run string) ([]agent.Interaction, error) {
	rows, err := st.Pool().Query(ctx, `SELECT body FROM pending_interactions WHERE run_id = $1 ORDER BY seq`, run)
	if err != nil {
		return nil, fmt.Errorf("pending interactions of run %s: %w", run, err)
	}
	ins, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (agent.Interaction, error) {
		var (
			body string
			in   agent.Interaction
		)
		if err := r.Scan(&body); err != nil {
			return in, err
		}
		return in, json.Unmarshal([]byte(body), &in)
	})
	if err != nil {
		return nil, fmt.Errorf("pending interactions of run %s: %w", run, err)
	}
	return ins, nil
}
