package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// TestLoadRepairsInterruptedTools stores what a process killed in the
// middle of a step leaves behind and checks that Load completes it without
// running anything.
func TestLoadRepairsInterruptedTools(t *testing.T) {
	t.Parallel()
	b := setup(t, text("resumed"))
	asst := calls(call("done", "echo", `{"text":"a"}`), call("running", "echo", `{"text":"b"}`), call("never", "echo", `{"text":"c"}`)).resp.Message
	if _, err := b.store.AppendMessages(b.ctx, "s1", llm.UserText("go"), asst); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"done", "running"} {
		if err := b.store.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: id, Tool: "echo", Status: store.IntentStarted, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.store.FinishIntent(b.ctx, "s1", "done", "echo: a", false); err != nil {
		t.Fatal(err)
	}

	if err := b.agent.Load(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.messages(t)); n != 2 {
		t.Fatalf("Load must not write; %d messages", n)
	}
	if !b.agent.NeedsContinue() {
		t.Fatal("unsettled calls should need a continue")
	}
	res := b.agent.Continue(b.ctx)
	if res.Outcome != agent.OutcomeCompleted || res.Text != "resumed" {
		t.Fatalf("continue: %+v", res)
	}
	msgs := b.messages(t)
	if len(msgs) != 4 {
		t.Fatalf("want user, calls, results, answer; got %d messages", len(msgs))
	}
	r := results(msgs[2])
	if r[0].Content != "echo: a" || r[0].IsError {
		t.Fatalf("finished call should keep its stored result: %+v", r[0])
	}
	if !r[1].IsError || !strings.HasPrefix(r[1].Content, "interrupted") {
		t.Fatalf("running call should be interrupted, not run again: %+v", r[1])
	}
	if r[2].IsError || r[2].Content != "echo: c" {
		t.Fatalf("a call that never started runs on resume: %+v", r[2])
	}
	intents, _ := b.store.Intents(b.ctx, "s1")
	if len(intents) != 3 {
		t.Fatalf("%d intents", len(intents))
	}
	for _, in := range intents {
		if in.Status != store.IntentFinished {
			t.Fatalf("intent %s left %s", in.CallID, in.Status)
		}
	}
	if got := b.provider.requests()[0].Messages; len(got) != 3 {
		t.Fatalf("continue sent %d messages", len(got))
	}
}

func TestCompaction(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("lorem ipsum ", 200) // ~600 tokens each
	b := setup(t,
		text(long), text(long), text(long),
		text("SUMMARY: the user said hello three times"), // the compaction call
		text("final"))
	b.cfg.ContextWindow = 2000
	b.cfg.Compaction = agent.CompactionPolicy{Threshold: 0.8, KeepRecent: 2}
	a := agent.New(b.cfg)
	for i := range 3 {
		if res := a.Send(b.ctx, llm.UserText("hello "+string(rune('a'+i)))); res.Outcome != agent.OutcomeCompleted {
			t.Fatalf("send %d: %+v", i, res)
		}
	}
	res := a.Send(b.ctx, llm.UserText("last"))
	if res.Text != "final" {
		t.Fatalf("result %+v", res)
	}
	reqs := b.provider.requests()
	if len(reqs) != 5 {
		t.Fatalf("want 5 model calls, got %d", len(reqs))
	}
	if !strings.Contains(reqs[3].System, "compact") {
		t.Fatalf("4th call should be the summary, system %q", reqs[3].System)
	}
	final := reqs[4].Messages
	if len(final) >= 8 || !strings.Contains(final[0].Text(), "SUMMARY: the user said hello") {
		t.Fatalf("final request should start with the summary and drop old turns: %d messages, first %q", len(final), final[0].Text())
	}
	if n := len(b.messages(t)); n != 8 {
		t.Fatalf("store must keep the full transcript, has %d", n)
	}
	pressure := 0
	for _, e := range b.events.all() {
		if _, ok := e.(*agent.ContextPressure); ok {
			pressure++
		}
	}
	if pressure != 1 {
		t.Fatalf("want one context pressure warning before the compaction, got %d", pressure)
	}
	c, err := b.store.LatestCompaction(b.ctx, "s1")
	if err != nil || c.UpToSeq == 0 {
		t.Fatalf("compaction %+v %v", c, err)
	}
	// A fresh agent loading the session sees the same compacted context.
	again := agent.New(b.cfg)
	if err := again.Load(b.ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(again.History()); int64(got) != 8-c.UpToSeq {
		t.Fatalf("loaded %d messages after compaction up to %d", got, c.UpToSeq)
	}
}

// refuseCompaction is TurnHooks whose PreCompact refuses every compaction.
type refuseCompaction struct{ asked int }

func (*refuseCompaction) Stopping(context.Context, agent.StopCheck) string { return "" }
func (h *refuseCompaction) Compacting(context.Context, agent.Compaction) string {
	h.asked++
	return "Compaction blocked by PreCompact hook: [no.sh]: not now"
}
func (*refuseCompaction) Compacted(context.Context, agent.Compaction) string { return "" }

// TestCompactionRefused: a compaction the hooks refuse does not run, as
// Claude Code's PreCompact hook blocks one: a manual one reports
// CompactionRefused, an automatic one lets the turn go on with the whole
// context and is not asked for again within the turn (the hook runs once
// a turn, not at every step); the events say it started and was refused,
// no summary is asked for, and nothing is stored.
func TestCompactionRefused(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("lorem ipsum ", 200) // ~600 tokens each
	b := setup(t, text(long), text(long), text(long), calls(call("c1", "echo", `{"text":"x"}`)), text("final"))
	b.cfg.ContextWindow = 2000
	b.cfg.Compaction = agent.CompactionPolicy{Threshold: 0.8, KeepRecent: 2}
	hooks := &refuseCompaction{}
	b.cfg.Hooks = hooks
	a := agent.New(b.cfg)
	for i := range 3 {
		if res := a.Send(b.ctx, llm.UserText("hello "+string(rune('a'+i)))); res.Outcome != agent.OutcomeCompleted {
			t.Fatalf("send %d: %+v", i, res)
		}
	}
	if res := a.Send(b.ctx, llm.UserText("last")); res.Text != "final" {
		t.Fatalf("the turn after a refused automatic compaction: %+v", res)
	}
	ran, err := a.Compact(b.ctx, "")
	var refused *agent.CompactionRefused
	if !ran || !errors.As(err, &refused) || refused.Reason != "Compaction blocked by PreCompact hook: [no.sh]: not now" {
		t.Fatalf("manual compaction: ran %v, err %v; want it refused with the hook's reason", ran, err)
	}
	reqs := b.provider.requests()
	if len(reqs) != 5 || len(reqs[4].Messages) != 9 {
		t.Fatalf("%d model calls, the last with %d messages; want the 4 turns' 5, the last with the whole context", len(reqs), len(reqs[len(reqs)-1].Messages))
	}
	if hooks.asked != 2 {
		t.Fatalf("the hooks were asked %d times; want once for the last turn's two steps and once for the manual compaction", hooks.asked)
	}
	var seen []string
	for _, e := range b.events.all() {
		switch e := e.(type) {
		case *agent.CompactionStarted:
			seen = append(seen, "started "+e.Trigger)
		case *agent.CompactionFinished:
			seen = append(seen, fmt.Sprintf("finished %s refused=%v %s", e.Trigger, e.Refused, e.Err))
		}
	}
	want := []string{"started auto", "finished auto refused=true Compaction blocked by PreCompact hook: [no.sh]: not now",
		"started manual", "finished manual refused=true Compaction blocked by PreCompact hook: [no.sh]: not now"}
	if !slices.Equal(seen, want) {
		t.Fatalf("events %q; want %q", seen, want)
	}
	if _, err := b.store.LatestCompaction(b.ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a compaction was stored: %v", err)
	}
}
