package storetest

import (
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// when is a fixed instant with nanoseconds, in a zone other than UTC, so
// that both precision and normalization to UTC are exercised.
var when = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+5", 5*3600))

func testSessions(t *testing.T, open Opener) {
	t.Run("CreateAndGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		in := store.Session{
			ID: "s1", Title: "Fix the build", Model: "anthropic/claude-sonnet-4-5",
			Workspace: "/home/me/project", Status: store.SessionIdle,
			CreatedAt: when, UpdatedAt: when.Add(time.Second),
			// Totals belong to AddUsage; CreateSession ignores these.
			Usage: llm.Usage{InputTokens: 99}, CostUSD: 3, CostKnown: false,
		}
		noErr(t, b.st.CreateSession(b.ctx, in))
		got := b.get(t, "s1")
		want := in
		want.CreatedAt = when.UTC()
		want.UpdatedAt = when.Add(time.Second).UTC()
		want.Usage, want.CostUSD, want.CostKnown = llm.Usage{}, 0, true
		equal(t, "session", got, want)
		if got.CreatedAt.Location() != time.UTC || got.UpdatedAt.Location() != time.UTC {
			t.Fatalf("times not in UTC: %v, %v", got.CreatedAt.Location(), got.UpdatedAt.Location())
		}
	})

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		before := time.Now()
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
		after := time.Now()
		got := b.get(t, "s1")
		equal(t, "status", got.Status, store.SessionActive)
		if got.CreatedAt.Before(before) || got.CreatedAt.After(after) {
			t.Fatalf("CreatedAt = %v, want between %v and %v", got.CreatedAt, before, after)
		}
		equal(t, "UpdatedAt", got.UpdatedAt, got.CreatedAt)
		equal(t, "CostKnown", got.CostKnown, true)
	})

	t.Run("DuplicateID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		first := b.session(t, "s1")
		err := b.st.CreateSession(b.ctx, store.Session{ID: "s1", Title: "other"})
		errIs(t, err, store.ErrConflict)
		equal(t, "session after conflict", b.get(t, "s1"), first)
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.GetSession(b.ctx, "nope")
		errIs(t, err, store.ErrNotFound)
		errIs(t, b.st.SetSessionStatus(b.ctx, "nope", store.SessionIdle), store.ErrNotFound)
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		errIs(t, b.st.CreateSession(b.ctx, store.Session{}), store.ErrInvalid)
		errIs(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1", Status: "sleeping"}), store.ErrInvalid)
		_, err := b.st.GetSession(b.ctx, "s1")
		errIs(t, err, store.ErrNotFound)

		s := b.session(t, "s2")
		errIs(t, b.st.SetSessionStatus(b.ctx, "s2", "sleeping"), store.ErrInvalid)
		equal(t, "session after invalid status", b.get(t, "s2"), s)
	})

	t.Run("ListNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		got, err := b.st.ListSessions(b.ctx, 0)
		noErr(t, err)
		equal(t, "sessions of empty store", len(got), 0)

		listsNewestFirst(t,
			func(id string, at time.Time) error {
				return b.st.CreateSession(b.ctx, store.Session{ID: id, CreatedAt: at})
			},
			func(limit int) ([]store.Session, error) { return b.st.ListSessions(b.ctx, limit) },
			func(s store.Session) string { return s.ID })
	})

	t.Run("SetStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		s := b.session(t, "s1")
		for _, status := range []store.SessionStatus{store.SessionIdle, store.SessionInterrupted, store.SessionFailed, store.SessionActive} {
			noErr(t, b.st.SetSessionStatus(b.ctx, "s1", status))
			s = b.requireAdvanced(t, s, "set status "+string(status))
			equal(t, "status", s.Status, status)
		}
	})

	t.Run("UpdatedAtAdvancesOnEveryWrite", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// UpdatedAt starts an hour ahead of the clock: writes must still
		// move it forward, never back to "now".
		future := time.Now().Add(time.Hour)
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1", UpdatedAt: future}))
		s := b.get(t, "s1")

		noErr(t, b.st.SetSessionStatus(b.ctx, "s1", store.SessionIdle))
		s = b.requireAdvanced(t, s, "set status")
		_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("hi"))
		noErr(t, err)
		s = b.requireAdvanced(t, s, "append messages")
		noErr(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c1", Tool: "bash"}))
		s = b.requireAdvanced(t, s, "start intent")
		noErr(t, b.st.FinishIntent(b.ctx, "s1", "c1", "ok", false))
		s = b.requireAdvanced(t, s, "finish intent")
		noErr(t, b.st.AddUsage(b.ctx, store.UsageRecord{SessionID: "s1", Model: "m", CostKnown: true}))
		s = b.requireAdvanced(t, s, "add usage")
		noErr(t, b.st.SaveCompaction(b.ctx, store.Compaction{SessionID: "s1", UpToSeq: 1, Summary: "hi"}))
		b.requireAdvanced(t, s, "save compaction")
	})

	t.Run("CloseTwice", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		noErr(t, b.st.Close())
		noErr(t, b.st.Close())
	})
}
