package storetest

import (
	"errors"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

func testSteps(t *testing.T, open Opener) {
	t.Run("AllPartsTogether", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		last, err := b.st.SaveStep(b.ctx, store.Step{
			SessionID: "s1",
			Messages:  []llm.Message{text(llm.RoleAssistant, "answer")},
			Usage:     &store.UsageRecord{Model: "m", Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}, CostUSD: 0.5, CostKnown: true},
			Status:    store.SessionActive,
		})
		noErr(t, err)
		equal(t, "last seq", last, int64(1))
		s := b.get(t, "s1")
		equal(t, "status", s.Status, store.SessionActive)
		equal(t, "usage", s.Usage, llm.Usage{InputTokens: 7, OutputTokens: 3})
		equal(t, "cost", s.CostUSD, 0.5)
		equal(t, "cost known", s.CostKnown, true)
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "messages", len(recs), 1)
		equal(t, "text", recs[0].Message.Text(), "answer")

		// A step with only a status keeps messages and totals; one with
		// only usage keeps the status.
		last, err = b.st.SaveStep(b.ctx, store.Step{SessionID: "s1", Status: store.SessionIdle})
		noErr(t, err)
		equal(t, "last seq after a status step", last, int64(1))
		s = b.get(t, "s1")
		equal(t, "usage after a status step", s.Usage, llm.Usage{InputTokens: 7, OutputTokens: 3})
		equal(t, "cost after a status step", s.CostUSD, 0.5)
		_, err = b.st.SaveStep(b.ctx, store.Step{SessionID: "s1", Usage: &store.UsageRecord{Model: "m2", Usage: llm.Usage{OutputTokens: 1}}})
		noErr(t, err)
		s = b.get(t, "s1")
		equal(t, "status kept", s.Status, store.SessionIdle)
		equal(t, "output tokens", s.Usage.OutputTokens, int64(4))
		equal(t, "unknown cost sticks", s.CostKnown, false)

		// A step of messages without usage (tool results) adds to last_seq
		// only, and sets its status.
		last, err = b.st.SaveStep(b.ctx, store.Step{SessionID: "s1", Status: store.SessionActive,
			Messages: []llm.Message{text(llm.RoleUser, "result")}})
		noErr(t, err)
		equal(t, "last seq after a messages step", last, int64(2))
		s = b.get(t, "s1")
		equal(t, "status of a messages step", s.Status, store.SessionActive)
		equal(t, "usage after a messages step", s.Usage, llm.Usage{InputTokens: 7, OutputTokens: 4})
		equal(t, "cost after a messages step", s.CostUSD, 0.5)
		equal(t, "unknown cost still sticks", s.CostKnown, false)
	})

	t.Run("CreatesTheSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		last, err := b.st.SaveStep(b.ctx, store.Step{
			Create:   &store.Session{ID: "s1", Title: "node", Model: "test/model", RunID: "r1", NodeID: 2},
			Messages: []llm.Message{text(llm.RoleUser, "first")},
			Status:   store.SessionActive,
		})
		noErr(t, err)
		equal(t, "last seq", last, int64(1))
		s := b.get(t, "s1")
		equal(t, "title", s.Title, "node")
		equal(t, "owner", [2]any{s.RunID, s.NodeID}, [2]any{"r1", int64(2)})
		equal(t, "status", s.Status, store.SessionActive)
		equal(t, "cost known", s.CostKnown, true)
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "messages", len(recs), 1)

		// A taken id is ErrConflict and writes nothing: neither the
		// message nor the status.
		_, err = b.st.SaveStep(b.ctx, store.Step{SessionID: "s1", Create: &store.Session{ID: "s1"},
			Messages: []llm.Message{text(llm.RoleUser, "second")}, Status: store.SessionIdle})
		errIs(t, err, store.ErrConflict)
		recs, err = b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "messages after the conflict", len(recs), 1)
		equal(t, "status after the conflict", b.get(t, "s1").Status, store.SessionActive)

		// Another session's record, or an invalid one, is ErrInvalid.
		for name, st := range map[string]store.Step{
			"other id": {SessionID: "s2", Create: &store.Session{ID: "s3"}, Messages: []llm.Message{text(llm.RoleUser, "x")}},
			"empty id": {Create: &store.Session{}, Messages: []llm.Message{text(llm.RoleUser, "x")}},
		} {
			if _, err := b.st.SaveStep(b.ctx, st); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s: err = %v, want ErrInvalid", name, err)
			}
		}
		for _, id := range []string{"s2", "s3"} {
			_, err := b.st.GetSession(b.ctx, id)
			errIs(t, err, store.ErrNotFound)
		}
	})

	t.Run("EmptyWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("one"), llm.UserText("two"))
		noErr(t, err)
		before := b.get(t, "s1")
		last, err := b.st.SaveStep(b.ctx, store.Step{SessionID: "s1"})
		noErr(t, err)
		equal(t, "last seq", last, int64(2))
		equal(t, "updated_at unchanged", b.get(t, "s1").UpdatedAt, before.UpdatedAt)
		_, err = b.st.SaveStep(b.ctx, store.Step{SessionID: "nope"})
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("InvalidPartWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		msg := []llm.Message{llm.UserText("kept out")}
		for name, st := range map[string]store.Step{
			"negative usage": {SessionID: "s1", Messages: msg, Usage: &store.UsageRecord{Usage: llm.Usage{InputTokens: -1}}},
			"other session":  {SessionID: "s1", Messages: msg, Usage: &store.UsageRecord{SessionID: "s2"}},
			"bad status":     {SessionID: "s1", Messages: msg, Status: "sleeping"},
			"bad message":    {SessionID: "s1", Messages: []llm.Message{{Role: "system"}}, Status: store.SessionFailed},
		} {
			_, err := b.st.SaveStep(b.ctx, st)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s: err = %v, want ErrInvalid", name, err)
			}
		}
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "messages after invalid steps", len(recs), 0)
		equal(t, "status after invalid steps", b.get(t, "s1").Status, store.SessionActive)
		_, err = b.st.SaveStep(b.ctx, store.Step{SessionID: "nope", Messages: msg, Status: store.SessionActive})
		errIs(t, err, store.ErrNotFound)
	})
}
