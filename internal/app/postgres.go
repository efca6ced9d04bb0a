//go:build !lean

package app

import (
	"context"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// openPostgres opens the PostgreSQL store at url (a lean build refuses
// it: lean.go).
func openPostgres(ctx context.Context, url string) (store.Store, error) {
	return postgres.Open(ctx, url)
}
