package storetest

import (
	"errors"
	"fmt"
	"strings"
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

	// TitleSession names a conversation once: the first title given
	// stays, a session created with one keeps it, and giving one is not a
	// write to the conversation (the lists' order stays).
	t.Run("Title", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1", Model: "test/model"}))
		s := b.get(t, "s1")
		equal(t, "title of a new session", s.Title, "")
		noErr(t, b.st.TitleSession(b.ctx, "s1", "fix the login page"))
		s.Title = "fix the login page"
		equal(t, "session after its title", b.get(t, "s1"), s)
		noErr(t, b.st.TitleSession(b.ctx, "s1", "a later prompt"))
		equal(t, "session after a second title", b.get(t, "s1"), s)

		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "s2", Title: "#3 leaf"}))
		noErr(t, b.st.TitleSession(b.ctx, "s2", "a prompt"))
		equal(t, "title of a session created with one", b.get(t, "s2").Title, "#3 leaf")

		errIs(t, b.st.TitleSession(b.ctx, "nope", "x"), store.ErrNotFound)

		// A rename replaces any title, clears it with "", and leaves
		// updated_at too; a cleared title is given again by TitleSession.
		noErr(t, b.st.RenameSession(b.ctx, "s1", "login page, round two"))
		s.Title = "login page, round two"
		equal(t, "session after a rename", b.get(t, "s1"), s)
		noErr(t, b.st.RenameSession(b.ctx, "s1", ""))
		s.Title = ""
		equal(t, "session after its title was cleared", b.get(t, "s1"), s)
		noErr(t, b.st.TitleSession(b.ctx, "s1", "named again"))
		equal(t, "title after a clear", b.get(t, "s1").Title, "named again")
		errIs(t, b.st.RenameSession(b.ctx, "nope", "x"), store.ErrNotFound)
	})

	// LatestConversation (--continue): the conversation of the workspace
	// written to last, whichever was created last, never a tree node's
	// session, and found among all sessions: a run of more than a
	// thousand nodes created after it once hid it.
	t.Run("LatestConversation", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const ws = "/home/me/project"
		_, err := b.st.LatestConversation(b.ctx, ws)
		errIs(t, err, store.ErrNotFound)

		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "old", Workspace: ws, CreatedAt: when}))
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "new", Workspace: ws, CreatedAt: when.Add(time.Minute)}))
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "elsewhere", Workspace: "/home/me/other", CreatedAt: when.Add(2 * time.Minute)}))
		for i := range 1001 {
			noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: fmt.Sprintf("r1.%d", i+1), Workspace: ws,
				CreatedAt: when.Add(time.Hour + time.Duration(i)*time.Millisecond), RunID: "r1", NodeID: int64(i + 1)}))
		}
		got, err := b.st.LatestConversation(b.ctx, ws)
		noErr(t, err)
		equal(t, "latest conversation", got.ID, "new")

		// Written to after the newer one was: it is the latest now.
		noErr(t, b.st.SetSessionStatus(b.ctx, "old", store.SessionIdle))
		got, err = b.st.LatestConversation(b.ctx, ws)
		noErr(t, err)
		equal(t, "latest conversation after a write", got.ID, "old")
		equal(t, "its workspace", got.Workspace, ws)

		got, err = b.st.LatestConversation(b.ctx, "/home/me/other")
		noErr(t, err)
		equal(t, "latest conversation of the other workspace", got.ID, "elsewhere")
		_, err = b.st.LatestConversation(b.ctx, "/home/me")
		errIs(t, err, store.ErrNotFound)
	})

	// Conversations: a workspace's conversations, the last written
	// first, a page at a time; never a tree node's session.
	t.Run("Conversations", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const ws = "/home/me/project"
		got, err := b.st.Conversations(b.ctx, store.ConversationQuery{Workspace: ws})
		noErr(t, err)
		equal(t, "conversations of an empty store", len(got), 0)
		for i, id := range []string{"a", "b", "c", "d"} {
			at := when.Add(time.Duration(i) * time.Minute)
			if id == "d" {
				at = when.Add(2 * time.Minute) // written with c: ties by id
			}
			noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: id, Workspace: ws, CreatedAt: at, UpdatedAt: at}))
		}
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "elsewhere", Workspace: "/home/me/other", CreatedAt: when.Add(time.Hour)}))
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "r1.2", Workspace: ws, CreatedAt: when.Add(time.Hour), RunID: "r1", NodeID: 2}))
		noErr(t, b.st.SetSessionStatus(b.ctx, "a", store.SessionIdle)) // written to last
		ids := func(ss []store.Session) string {
			var out []string
			for _, s := range ss {
				out = append(out, s.ID)
			}
			return strings.Join(out, " ")
		}
		got, err = b.st.Conversations(b.ctx, store.ConversationQuery{Workspace: ws})
		noErr(t, err)
		equal(t, "the workspace's conversations", ids(got), "a d c b")
		page, err := b.st.Conversations(b.ctx, store.ConversationQuery{Workspace: ws, Limit: 2})
		noErr(t, err)
		equal(t, "the first page", ids(page), "a d")
		last := page[len(page)-1]
		page, err = b.st.Conversations(b.ctx, store.ConversationQuery{Workspace: ws, Limit: 2, AfterUpdated: last.UpdatedAt, AfterID: last.ID})
		noErr(t, err)
		equal(t, "the second page", ids(page), "c b")
		last = page[len(page)-1]
		page, err = b.st.Conversations(b.ctx, store.ConversationQuery{Workspace: ws, Limit: 2, AfterUpdated: last.UpdatedAt, AfterID: last.ID})
		noErr(t, err)
		equal(t, "past the last page", len(page), 0)
		got, err = b.st.Conversations(b.ctx, store.ConversationQuery{})
		noErr(t, err)
		equal(t, "every workspace's", ids(got), "a elsewhere d c b")
	})

	t.Run("OwningNode", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		node := store.Session{ID: "r1.2", Title: "#2 research", Status: store.SessionIdle,
			CreatedAt: when, UpdatedAt: when, CostKnown: true, RunID: "r1", NodeID: 2}
		noErr(t, b.st.CreateSession(b.ctx, node))
		got := b.get(t, "r1.2")
		equal(t, "run id", got.RunID, "r1")
		equal(t, "node id", got.NodeID, int64(2))
		equal(t, "owned by node", got.OwnedByNode(), true)

		// A conversation has no owner, whatever its id looks like.
		noErr(t, b.st.CreateSession(b.ctx, store.Session{ID: "r1.3", CreatedAt: when.Add(time.Second)}))
		conv := b.get(t, "r1.3")
		equal(t, "conversation run id", conv.RunID, "")
		equal(t, "conversation node id", conv.NodeID, int64(0))
		equal(t, "conversation owned by node", conv.OwnedByNode(), false)

		list, err := b.st.ListSessions(b.ctx, 0)
		noErr(t, err)
		equal(t, "listed sessions", len(list), 2)
		equal(t, "listed conversation", list[0], conv)
		equal(t, "listed node session", list[1], got)

		// The owner survives every other write.
		noErr(t, b.st.SetSessionStatus(b.ctx, "r1.2", store.SessionActive))
		_, err = b.st.AppendMessages(b.ctx, "r1.2", llm.UserText("hi"))
		noErr(t, err)
		noErr(t, b.st.AddUsage(b.ctx, store.UsageRecord{SessionID: "r1.2", Model: "m", CostKnown: true}))
		got = b.get(t, "r1.2")
		equal(t, "owner after writes", [2]any{got.RunID, got.NodeID}, [2]any{"r1", int64(2)})

		for name, s := range map[string]store.Session{
			"run without node": {ID: "x1", RunID: "r1"},
			"node without run": {ID: "x2", NodeID: 2},
			"negative node id": {ID: "x3", RunID: "r1", NodeID: -1},
		} {
			if err := b.st.CreateSession(b.ctx, s); !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s: error = %v, want one wrapping %v", name, err, store.ErrInvalid)
			}
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
