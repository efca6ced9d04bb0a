package storetest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

func testUsage(t *testing.T, open Opener) {
	t.Run("TotalsAddUp", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		b.session(t, "other")
		calls := []store.UsageRecord{
			{SessionID: "s1", Model: "m", Usage: llm.Usage{InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 5000, CacheWriteTokens: 300}, CostUSD: 0.25, CostKnown: true, At: when},
			{SessionID: "s1", Model: "m", Usage: llm.Usage{InputTokens: 10, OutputTokens: 20}, CostUSD: 0.5, CostKnown: true},
		}
		for _, u := range calls {
			noErr(t, b.st.AddUsage(b.ctx, u))
		}
		s := b.get(t, "s1")
		equal(t, "usage", s.Usage, llm.Usage{InputTokens: 1010, OutputTokens: 220, CacheReadTokens: 5000, CacheWriteTokens: 300})
		equal(t, "cost", s.CostUSD, 0.75)
		equal(t, "cost known", s.CostKnown, true)
		// Other sessions are untouched.
		o := b.get(t, "other")
		equal(t, "other usage", o.Usage, llm.Usage{})
		equal(t, "other cost", o.CostUSD, 0.0)
	})

	t.Run("UnknownCostSticks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		for i, known := range []bool{true, false, true} {
			cost := 0.0
			if known {
				cost = 1
			}
			noErr(t, b.st.AddUsage(b.ctx, store.UsageRecord{
				SessionID: "s1", Model: fmt.Sprint("m", i), Usage: llm.Usage{OutputTokens: 1}, CostUSD: cost, CostKnown: known,
			}))
			s := b.get(t, "s1")
			equal(t, fmt.Sprintf("cost known after call %d", i+1), s.CostKnown, i == 0)
		}
		s := b.get(t, "s1")
		equal(t, "known costs still summed", s.CostUSD, 2.0)
		equal(t, "tokens", s.Usage.OutputTokens, int64(3))
	})

	t.Run("UnknownSessionAndInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		errIs(t, b.st.AddUsage(b.ctx, store.UsageRecord{SessionID: "nope", CostKnown: true}), store.ErrNotFound)
		b.session(t, "s1")
		for _, u := range []store.UsageRecord{
			{Model: "m"},
			{SessionID: "s1", Usage: llm.Usage{InputTokens: -1}},
			{SessionID: "s1", CostUSD: -0.1},
			{SessionID: "s1", CostUSD: math.NaN()},
		} {
			errIs(t, b.st.AddUsage(b.ctx, u), store.ErrInvalid)
		}
		s := b.get(t, "s1")
		equal(t, "usage after invalid records", s.Usage, llm.Usage{})
		equal(t, "cost known after invalid records", s.CostKnown, true)
	})
}

func testCompactions(t *testing.T, open Opener) {
	t.Run("NoneIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		_, err := b.st.LatestCompaction(b.ctx, "s1")
		errIs(t, err, store.ErrNotFound)
		_, err = b.st.LatestCompaction(b.ctx, "nope")
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("LatestWins", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.session(t, "s1")
		b.session(t, "s2")
		for i := range 6 {
			_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText(fmt.Sprint(i)))
			noErr(t, err)
		}
		first := store.Compaction{SessionID: "s1", UpToSeq: 2, Summary: "first two", CreatedAt: when}
		noErr(t, b.st.SaveCompaction(b.ctx, first))
		got, err := b.st.LatestCompaction(b.ctx, "s1")
		noErr(t, err)
		first.CreatedAt = when.UTC()
		equal(t, "first compaction", got, first)

		before := time.Now()
		second := store.Compaction{SessionID: "s1", UpToSeq: 6, Summary: "all six, <with> & \"quotes\""}
		noErr(t, b.st.SaveCompaction(b.ctx, second))
		got, err = b.st.LatestCompaction(b.ctx, "s1")
		noErr(t, err)
		if got.CreatedAt.Before(before) || got.CreatedAt.Location() != time.UTC {
			t.Fatalf("CreatedAt = %v, want a UTC time after %v", got.CreatedAt, before)
		}
		second.CreatedAt = got.CreatedAt
		equal(t, "second compaction", got, second)

		// Messages stay in the store.
		recs, err := b.st.Messages(b.ctx, "s1", 0)
		noErr(t, err)
		equal(t, "messages after compaction", len(recs), 6)
		// Other sessions have none.
		_, err = b.st.LatestCompaction(b.ctx, "s2")
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("UnknownSessionAndInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		errIs(t, b.st.SaveCompaction(b.ctx, store.Compaction{SessionID: "nope", UpToSeq: 1}), store.ErrNotFound)
		b.session(t, "s1")
		_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("a"), llm.UserText("b"))
		noErr(t, err)
		errIs(t, b.st.SaveCompaction(b.ctx, store.Compaction{SessionID: "s1", UpToSeq: 0}), store.ErrInvalid)
		errIs(t, b.st.SaveCompaction(b.ctx, store.Compaction{SessionID: "s1", UpToSeq: 3}), store.ErrInvalid)
		_, err = b.st.LatestCompaction(b.ctx, "s1")
		errIs(t, err, store.ErrNotFound)
	})
}
