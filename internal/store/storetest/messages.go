package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// everyPart is a pair of messages holding every part kind, with the details
// that are easy to lose: raw JSON tool input with nesting, unicode and HTML
// characters, a thinking signature, error and non-error tool results.
func everyPart() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			{Type: llm.PartThinking, Text: "The user wants <b>bold</b> & more.", Signature: "EqQBCkYIBxgCKkD+sig=="},
			llm.TextPart("Let me look. 日本語 ✓"),
			{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{
				ID: "toolu_01", Name: "read_file",
				Input: json.RawMessage(`{"path":"a<b>&c.go","range":[1,20],"opts":{"follow":true,"enc":null},"note":"line\nbreak \"quoted\""}`),
			}},
			{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "toolu_02", Name: "list", Input: json.RawMessage(`{}`)}},
		}},
		{Role: llm.RoleUser, Parts: []llm.Part{
			{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "toolu_01", Content: "package main\n"}},
			{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "toolu_02", Content: "permission denied", IsError: true}},
			llm.TextPart(""),
		}},
	}
}

func testMessages(t *testing.T, open Opener) {
	t.Run("SeqFromOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		last, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("one"))
		noErr(t, err)
		equal(t, "seq of first message", last, int64(1))
		last, err = b.st.AppendMessages(b.ctx, "s1",
			text(llm.RoleAssistant, "two"), llm.UserText("three"), text(llm.RoleAssistant, "four"))
		noErr(t, err)
		equal(t, "seq after appending three", last, int64(4))

		before := time.Now()
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		want := []string{"one", "two", "three", "four"}
		equal(t, "message count", len(recs), len(want))
		for i, r := range recs {
			equal(t, "seq", r.Seq, int64(i+1))
			equal(t, "session id", r.SessionID, "s1")
			equal(t, "text", r.Message.Text(), want[i])
			if r.CreatedAt.IsZero() || r.CreatedAt.After(before) || r.CreatedAt.Location() != time.UTC {
				t.Fatalf("message %d: CreatedAt = %v, want a UTC time before %v", r.Seq, r.CreatedAt, before)
			}
		}
		equal(t, "roles", []llm.Role{recs[0].Message.Role, recs[1].Message.Role}, []llm.Role{llm.RoleUser, llm.RoleAssistant})
	})

	t.Run("SeqIsPerSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "a")
		b.session(t, "b")
		_, err := b.st.AppendMessages(b.ctx, "a", llm.UserText("a1"), llm.UserText("a2"))
		noErr(t, err)
		last, err := b.st.AppendMessages(b.ctx, "b", llm.UserText("b1"))
		noErr(t, err)
		equal(t, "first seq of second session", last, int64(1))
	})

	t.Run("AfterSeq", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		for i := 1; i <= 5; i++ {
			_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText(fmt.Sprint(i)))
			noErr(t, err)
		}
		for _, tc := range []struct {
			after int64
			want  []int64
		}{
			{-1, []int64{1, 2, 3, 4, 5}},
			{0, []int64{1, 2, 3, 4, 5}},
			{3, []int64{4, 5}},
			{5, nil},
			{100, nil},
		} {
			recs, err := b.st.Messages(b.ctx, "s1", tc.after)
			noErr(t, err)
			var seqs []int64
			for _, r := range recs {
				seqs = append(seqs, r.Seq)
				equal(t, "text", r.Message.Text(), fmt.Sprint(r.Seq))
			}
			equal(t, fmt.Sprintf("seqs after %d", tc.after), seqs, tc.want)
		}
	})

	t.Run("EveryPartRoundTrips", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		msgs := everyPart()
		_, err := b.st.AppendMessages(b.ctx, "s1", msgs...)
		noErr(t, err)
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "message count", len(recs), len(msgs))
		for i, r := range recs {
			equal(t, fmt.Sprintf("message %d", i+1), r.Message, msgs[i])
		}
		// Byte-exact raw input, HTML characters included.
		equal(t, "raw tool input", string(recs[0].Message.ToolCalls()[0].Input), string(msgs[0].ToolCalls()[0].Input))
	})

	t.Run("UnknownSession", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.AppendMessages(b.ctx, "nope", llm.UserText("hi"))
		errIs(t, err, store.ErrNotFound)
		_, err = b.st.AppendMessages(b.ctx, "nope")
		errIs(t, err, store.ErrNotFound)
		_, err = b.st.Messages(b.ctx, "nope", 0)
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("EmptySession", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "message count", len(recs), 0)
		last, err := b.st.AppendMessages(b.ctx, "s1")
		noErr(t, err)
		equal(t, "last seq of empty append", last, int64(0))
	})

	t.Run("InvalidBatchWritesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("ok"), llm.Message{Role: "system"})
		errIs(t, err, store.ErrInvalid)
		_, err = b.st.AppendMessages(b.ctx, "s1", llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartToolCall}}})
		errIs(t, err, store.ErrInvalid)
		last, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("first"))
		noErr(t, err)
		equal(t, "seq after rejected batches", last, int64(1))
	})

	t.Run("ConcurrentAppendsStayDense", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		const workers, rounds = 12, 8
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			lasts []int64
			errs  = make(chan error, workers*rounds)
		)
		for w := range workers {
			wg.Go(func() {
				for r := range rounds {
					// Odd rounds append two messages at once.
					msgs := []llm.Message{llm.UserText(fmt.Sprintf("w%d r%d a", w, r))}
					if r%2 == 1 {
						msgs = append(msgs, text(llm.RoleAssistant, fmt.Sprintf("w%d r%d b", w, r)))
					}
					last, err := b.st.AppendMessages(b.ctx, "s1", msgs...)
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					lasts = append(lasts, last)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent append: %v", err)
		}

		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		total := workers * (rounds + rounds/2)
		equal(t, "message count", len(recs), total)
		seen := map[string]int64{}
		for i, r := range recs {
			equal(t, "seq", r.Seq, int64(i+1))
			if prev, dup := seen[r.Message.Text()]; dup {
				t.Fatalf("message %q stored twice, at %d and %d", r.Message.Text(), prev, r.Seq)
			}
			seen[r.Message.Text()] = r.Seq
		}
		// Pairs appended in one call are adjacent.
		for txt, seq := range seen {
			if txt[len(txt)-1] == 'b' {
				equal(t, "seq of "+txt, seq, seen[txt[:len(txt)-1]+"a"]+1)
			}
		}
		// Every call got a distinct last seq, the highest being the total.
		slices.Sort(lasts)
		for i := 1; i < len(lasts); i++ {
			if lasts[i] == lasts[i-1] {
				t.Fatalf("two appends returned last seq %d", lasts[i])
			}
		}
		equal(t, "highest last seq", lasts[len(lasts)-1], int64(total))
	})
}
