package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

func testIntents(t *testing.T, open Opener) {
	t.Run("StartThenFinish", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		in := store.Intent{
			SessionID: "s1", CallID: "toolu_01", Tool: "bash",
			Input: json.RawMessage(`{"command":"go test ./... && echo <done>"}`), StartedAt: when,
		}
		noErr(t, b.st.StartIntent(b.ctx, in))

		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		want := in
		want.Status = store.IntentStarted
		want.StartedAt = when.UTC()
		equal(t, "started intents", got, []store.Intent{want})

		before := time.Now()
		noErr(t, b.st.FinishIntent(b.ctx, "s1", "toolu_01", "exit status 1", true))
		after := time.Now()
		got, err = b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "intent count", len(got), 1)
		ended := got[0].EndedAt
		if ended == nil || ended.Before(before) || ended.After(after) || ended.Location() != time.UTC {
			t.Fatalf("EndedAt = %v, want a UTC time between %v and %v", ended, before, after)
		}
		want.Status, want.Result, want.IsError, want.EndedAt = store.IntentFinished, "exit status 1", true, ended
		equal(t, "finished intent", got[0], want)
	})

	t.Run("StartRecordsOnlyAStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		ended := when
		before := time.Now()
		noErr(t, b.st.StartIntent(b.ctx, store.Intent{
			SessionID: "s1", CallID: "c1", Tool: "bash",
			Status: store.IntentFinished, Result: "forged", IsError: true, EndedAt: &ended,
		}))
		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "intent count", len(got), 1)
		in := got[0]
		if in.Status != store.IntentStarted || in.Result != "" || in.IsError || in.EndedAt != nil {
			t.Fatalf("started intent = %+v, want status started and no result", in)
		}
		if in.StartedAt.Before(before) {
			t.Fatalf("StartedAt = %v, want now (after %v)", in.StartedAt, before)
		}
		if in.Input != nil {
			t.Fatalf("Input = %q, want nil", in.Input)
		}
		// The result can still be stored.
		noErr(t, b.st.FinishIntent(b.ctx, "s1", "c1", "", false))
	})

	t.Run("DuplicateStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		b.session(t, "s2")
		in := store.Intent{SessionID: "s1", CallID: "c1", Tool: "bash", Input: json.RawMessage(`{"a":1}`)}
		noErr(t, b.st.StartIntent(b.ctx, in))
		dup := in
		dup.Tool, dup.Input = "write", json.RawMessage(`{"b":2}`)
		// A refused start writes nothing, not even the session's touch.
		before := b.get(t, "s1")
		errIs(t, b.st.StartIntent(b.ctx, dup), store.ErrConflict)
		equal(t, "updated_at after a refused start", b.get(t, "s1").UpdatedAt, before.UpdatedAt)
		noErr(t, b.st.FinishIntent(b.ctx, "s1", "c1", "done", false))
		errIs(t, b.st.StartIntent(b.ctx, dup), store.ErrConflict)

		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "intent count", len(got), 1)
		equal(t, "tool kept", got[0].Tool, "bash")
		equal(t, "input kept", string(got[0].Input), `{"a":1}`)

		// Call ids are scoped to their session.
		other := in
		other.SessionID = "s2"
		noErr(t, b.st.StartIntent(b.ctx, other))
	})

	t.Run("FinishUnknownAndTwice", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		errIs(t, b.st.FinishIntent(b.ctx, "s1", "never-started", "x", false), store.ErrNotFound)
		errIs(t, b.st.FinishIntent(b.ctx, "nope", "c1", "x", false), store.ErrNotFound)

		noErr(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c1", Tool: "bash"}))
		noErr(t, b.st.FinishIntent(b.ctx, "s1", "c1", "first", false))
		before := b.get(t, "s1")
		errIs(t, b.st.FinishIntent(b.ctx, "s1", "c1", "second", true), store.ErrConflict)
		equal(t, "updated_at after a refused finish", b.get(t, "s1").UpdatedAt, before.UpdatedAt)
		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "result kept", got[0].Result, "first")
		equal(t, "is_error kept", got[0].IsError, false)
	})

	t.Run("UnknownSessionAndInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		errIs(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "nope", CallID: "c1", Tool: "bash"}), store.ErrNotFound)
		_, err := b.st.Intents(b.ctx, "nope")
		errIs(t, err, store.ErrNotFound)

		b.session(t, "s1")
		errIs(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c1"}), store.ErrInvalid)
		errIs(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", Tool: "bash"}), store.ErrInvalid)
		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "intents after invalid starts", len(got), 0)
	})

	t.Run("ProcessGroup", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		before := b.session(t, "s1")
		// StartIntent never records a process group: it is not known yet.
		noErr(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c1", Tool: "shell", PGID: 99}))
		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "pgid at start", got[0].PGID, 0)

		before = b.requireAdvanced(t, before, "StartIntent")
		noErr(t, b.st.SetIntentPGID(b.ctx, "s1", "c1", 4242))
		b.requireAdvanced(t, before, "SetIntentPGID")
		got, err = b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "pgid set", got[0].PGID, 4242)
		equal(t, "status", got[0].Status, store.IntentStarted)

		// It survives the finish, which records the result only.
		noErr(t, b.st.FinishIntent(b.ctx, "s1", "c1", "done", false))
		got, err = b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "pgid after finish", got[0].PGID, 4242)
		equal(t, "result", got[0].Result, "done")

		errIs(t, b.st.SetIntentPGID(b.ctx, "s1", "c1", 7), store.ErrConflict)
		errIs(t, b.st.SetIntentPGID(b.ctx, "s1", "never-started", 7), store.ErrNotFound)
		errIs(t, b.st.SetIntentPGID(b.ctx, "nope", "c1", 7), store.ErrNotFound)
		noErr(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c2", Tool: "shell"}))
		errIs(t, b.st.SetIntentPGID(b.ctx, "s1", "c2", 0), store.ErrInvalid)
		errIs(t, b.st.SetIntentPGID(b.ctx, "s1", "c2", -3), store.ErrInvalid)
		got, err = b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		equal(t, "pgid kept", got[0].PGID, 4242)
		equal(t, "invalid pgid not written", got[1].PGID, 0)
	})

	t.Run("OrderedByStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		for _, c := range []struct {
			id  string
			off time.Duration
		}{{"late", 2 * time.Second}, {"early", 0}, {"middle", time.Second}} {
			noErr(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: c.id, Tool: "t", StartedAt: when.Add(c.off)}))
		}
		got, err := b.st.Intents(b.ctx, "s1")
		noErr(t, err)
		var ids []string
		for _, in := range got {
			ids = append(ids, in.CallID)
		}
		equal(t, "call ids", ids, []string{"early", "middle", "late"})
	})
}
