// Package storetest is the one conformance suite every store dialect must
// pass. A dialect's test calls Run with a function that opens a fresh,
// empty store; the suite pins the behaviour the engine and the agent loop
// rely on, beyond what the store.Store method comments say:
//
//   - times round-trip to the nanosecond and come back in UTC;
//   - CreateSession defaults an empty status to active, a zero CreatedAt to
//     now and a zero UpdatedAt to CreatedAt, and starts usage totals at zero
//     with a known cost, ignoring the totals it is given;
//   - UpdatedAt strictly increases on every write that concerns the session;
//   - CreateRun defaults an empty status to running and zero times to now;
//     Commit validates every record before writing any, writes all of them
//     or none, sets the UpdatedAt of the run and of every node to now (a
//     run's strictly increases, like a session's), ignores the UpdatedAt it
//     is given and keeps a node's first CreatedAt; nil and empty BlockedBy
//     and Options round-trip as they were;
//   - leases follow the store.LeaseStore contract to the nanosecond of
//     the caller's clock (expiry is exclusive: a lease is dead at Expires),
//     and among racing acquirers exactly one wins;
//   - a complete run's status is final;
//   - invalid records fail with store.ErrInvalid and write nothing;
//   - reads of an unknown session or run fail with store.ErrNotFound;
//   - Close may be called twice.
//
// The suite only uses the store.Store interface, so it holds for every
// dialect alike. Dialect-specific behaviour (files, pools, migrations) is
// tested beside the dialect.
package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Opener returns a new, empty store for one test. It registers its own
// cleanup (closing the store, dropping a schema) with t.
type Opener func(t *testing.T) store.Store

// Run runs the conformance suite against the dialect that open creates.
// Every subtest opens its own store and runs in parallel.
func Run(t *testing.T, open Opener) {
	t.Helper()
	groups := []struct {
		name string
		run  func(*testing.T, Opener)
	}{
		{"Sessions", testSessions},
		{"Messages", testMessages},
		{"Intents", testIntents},
		{"Usage", testUsage},
		{"Steps", testSteps},
		{"Compactions", testCompactions},
		{"Tree", testTree},
		{"Leases", testLeases},
		{"Queued", testQueued},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, open)
		})
	}
}

// bundle is what every test works with.
type bundle struct {
	ctx context.Context
	st  store.Store
}

func setup(t *testing.T, open Opener) *bundle {
	t.Helper()
	return &bundle{ctx: t.Context(), st: open(t)}
}

// session creates a session with default fields and returns it as stored.
func (b *bundle) session(t *testing.T, id string) store.Session {
	t.Helper()
	noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: id, Title: "title " + id, Model: "test/model"}))
	return b.get(t, id)
}

// get returns the session as stored now.
func (b *bundle) get(t *testing.T, id string) store.Session {
	t.Helper()
	s, err := b.st.GetSession(b.ctx, id)
	noErr(t, err)
	return s
}

// requireAdvanced fails unless the session's UpdatedAt moved past before's.
func (b *bundle) requireAdvanced(t *testing.T, before store.Session, what string) store.Session {
	t.Helper()
	after := b.get(t, before.ID)
	if !after.UpdatedAt.After(before.UpdatedAt) {
		t.Fatalf("%s: UpdatedAt = %v, want after %v", what, after.UpdatedAt, before.UpdatedAt)
	}
	return after
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func errIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want one wrapping %q", err, target)
	}
}

func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// text returns a one-text-part message of role r.
func text(r llm.Role, s string) llm.Message {
	return llm.Message{Role: r, Parts: []llm.Part{llm.TextPart(s)}}
}

// listsNewestFirst creates three records out of order and checks that list
// returns them by CreatedAt, newest first, and honours its limit (0 and a
// negative limit mean all).
func listsNewestFirst[T any](t *testing.T, create func(id string, at time.Time) error, list func(limit int) ([]T, error), id func(T) string) {
	t.Helper()
	for _, r := range []struct {
		id  string
		age time.Duration
	}{{"middle", time.Hour}, {"newest", 0}, {"oldest", 2 * time.Hour}} {
		noErr(t, create(r.id, when.Add(-r.age)))
	}
	ids := func(limit int) []string {
		t.Helper()
		xs, err := list(limit)
		noErr(t, err)
		var out []string
		for _, x := range xs {
			out = append(out, id(x))
		}
		return out
	}
	all := []string{"newest", "middle", "oldest"}
	equal(t, "limit 0", ids(0), all)
	equal(t, "limit -1", ids(-1), all)
	equal(t, "limit 10", ids(10), all)
	equal(t, "limit 2", ids(2), all[:2])
	equal(t, "limit 1", ids(1), all[:1])
}
