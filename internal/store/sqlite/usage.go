package sqlite

import (
	"context"
	"fmt"

	"github.com/arbor-run/arbor/internal/store"
)

// AddUsage records one model call and adds it to the session totals in the
// same transaction. The session's cost stays known only while every call's
// cost was known; CostUSD sums the known costs. ErrNotFound for an unknown
// session; a zero At becomes now.
func (s *Store) AddUsage(ctx context.Context, u store.UsageRecord) error {
	if _, err := s.saveStep(ctx, store.Step{SessionID: u.SessionID, Usage: &u}); err != nil {
		return fmt.Errorf("add usage to session %s: %w", u.SessionID, err)
	}
	return nil
}
