package tree_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// hostTool calls the host's tool name with input, as the host agent would.
func hostTool(t *testing.T, h *tree.Host, name string, input map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range h.Tools() {
		if tl.Info().Name == name {
			return tl.Run(context.Background(), tool.Call{ID: "call-" + name + string(raw), Input: raw})
		}
	}
	t.Fatalf("the host has no %s tool", name)
	return tool.Result{}
}

// hostEvents collects the tree events of run id and signals every one.
func hostEvents(b *bundle, id string) <-chan agent.Event {
	ch := make(chan agent.Event, 256)
	b.app.Bus.Subscribe(func(ev agent.Event) {
		switch e := ev.(type) {
		case *tree.NodeChanged:
			if e.RunID == id {
				ch <- ev
			}
		case *tree.AgentStarted:
			if e.RunID == id {
				ch <- ev
			}
		case *tree.Notified:
			if e.RunID == id {
				ch <- ev
			}
		}
	})
	return ch
}

// waitNode reads events until node id reaches state.
func waitNode(t *testing.T, ch <-chan agent.Event, id int64, state tree.NodeState) {
	t.Helper()
	for ev := range ch {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.ID == id && c.Node.State == state {
			return
		}
	}
}

// A hosted run behaves the same whether Host finds it in the store or, as
// a fresh headless session asks (New), creates it and builds it from what
// it wrote.
func TestHostRunsChildrenOfItsAgent(t *testing.T) {
	t.Parallel()
	for _, fresh := range []bool{false, true} {
		t.Run(fmt.Sprintf("new=%v", fresh), func(t *testing.T) {
			t.Parallel()
			testHostRunsChildren(t, fresh)
		})
	}
}

func testHostRunsChildren(t *testing.T, fresh bool) {
	b := setup(t, script{
		2: {calls(call("notify", map[string]any{"message": "halfway"})), complete("two done")},
	})
	ch := hostEvents(b, "sess-1")
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "sess-1", SessionID: "sess-1", Workspace: b.app.Workspace, New: fresh})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	defer h.Close()
	names := []string{}
	for _, tl := range h.Tools() {
		names = append(names, tl.Info().Name)
	}
	if got := strings.Join(names, ","); got != "spawn,fork,ask,read_tree,read_node,stop,pause,resume,modify" {
		t.Fatalf("host tools = %s", got)
	}
	if busy(h) {
		t.Fatal("a new hosted run is busy")
	}
	if r := hostTool(t, h, "spawn", map[string]any{"goal": "count", "prompt": "count to two"}); r.IsError || !strings.Contains(r.Content, "#2") {
		t.Fatalf("spawn = %+v", r)
	}
	var started, notified bool
	for ev := range ch {
		switch e := ev.(type) {
		case *tree.AgentStarted:
			started = e.Node.ID == 2 && e.Node.SessionID == "sess-1.2"
		case *tree.Notified:
			notified = e.From.ID == 2 && e.To == 1 && e.Message == "halfway"
		}
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.ID == 2 && c.Node.State.Terminal() {
			if c.Node.State != tree.StateComplete || c.Node.Result != "two done" {
				t.Fatalf("#2 ended %s with %q (%s)", c.Node.State, c.Node.Result, c.Node.Error)
			}
			break
		}
	}
	if !started || !notified {
		t.Fatalf("agent started %v, notified %v", started, notified)
	}
	if busy(h) {
		t.Fatal("busy after the only child ended")
	}
	root := b.nodeIn(t, "sess-1", 1)
	if root.Kind != tree.KindHost || root.State != tree.StateActive {
		t.Fatalf("root = %s %s", root.Kind, root.State)
	}
	// An arbor run may not drive it.
	if _, err := b.engine.Drive(b.ctx, "sess-1"); !errors.Is(err, tree.ErrHosted) && !errors.Is(err, tree.ErrRunActive) {
		t.Fatalf("Drive of a hosted run: %v", err)
	}
	// A run that exists is no new one.
	if _, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "sess-1", SessionID: "sess-1", New: true}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Host New of an existing run: %v, want a conflict", err)
	}
	if n := b.nodeIn(t, "sess-1", 2); n.State != tree.StateComplete {
		t.Fatalf("#2 after the refused Host is %s", n.State)
	}
}

func TestHostResumesChildrenAfterClose(t *testing.T) {
	t.Parallel()
	var first sync.Once
	b := setup(t, nil, setupOpts{respond: func(req llmtest.Request) llmtest.Turn {
		stall := false
		first.Do(func() { stall = true })
		if stall { // the first turn stalls until the host's Close cancels it
			return llmtest.Turn{Text: "never seen", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
		}
		return complete("resumed result")
	}})
	ch := hostEvents(b, "sess-2")
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "sess-2", SessionID: "sess-2", Workspace: b.app.Workspace, New: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	hostTool(t, h, "spawn", map[string]any{"goal": "slow", "prompt": "take your time"})
	waitNode(t, ch, 2, tree.StateActive)
	if !busy(h) {
		t.Fatal("not busy while a child runs")
	}
	if _, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "sess-2", SessionID: "sess-2"}); !errors.Is(err, tree.ErrRunActive) {
		t.Fatalf("second Host: %v", err)
	}
	b.srv.WaitRequests(1) // the stalled turn
	h.Close()
	if _, err := b.engine.Drive(b.ctx, "sess-2"); !errors.Is(err, tree.ErrHosted) || !strings.Contains(err.Error(), "arbor headless -r sess-2") {
		t.Fatalf("Drive of a hosted run: %v", err)
	}
	if n := b.nodeIn(t, "sess-2", 2); n.State != tree.StateActive {
		t.Fatalf("#2 after Close is %s, want active (interrupted)", n.State)
	}
	// Its hint is the conversation's, not arbor resume's (which refuses).
	if r, err := b.app.Store.GetRun(b.ctx, "sess-2"); err != nil || r.Status != store.RunInterrupted || !strings.Contains(r.Error, "arbor headless -r sess-2") {
		t.Fatalf("hosted run after Close: %+v %v", r, err)
	}
	h2, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "sess-2", SessionID: "sess-2"})
	if err != nil {
		t.Fatal(err)
	}
	h2.Start()
	defer h2.Close()
	waitNode(t, ch, 2, tree.StateComplete)
	if n := b.nodeIn(t, "sess-2", 2); n.Result != "resumed result" {
		t.Fatalf("#2 result %q", n.Result)
	}
}

func TestHostStopAll(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, setupOpts{respond: func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "too late", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
	}})
	ch := hostEvents(b, "sess-3")
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "sess-3", SessionID: "sess-3", Workspace: b.app.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	defer h.Close()
	hostTool(t, h, "spawn", map[string]any{"goal": "a", "prompt": "a"})
	hostTool(t, h, "spawn", map[string]any{"goal": "b", "prompt": "b", "blocked_by": []string{"#2"}})
	waitNode(t, ch, 2, tree.StateActive)
	if n := h.StopAll(); n != 2 {
		t.Fatalf("StopAll stopped %d, want 2", n)
	}
	if busy(h) {
		t.Fatal("busy after StopAll")
	}
	for _, v := range h.Nodes() {
		if v.State != tree.StateCancelled {
			t.Fatalf("#%d is %s after StopAll", v.ID, v.State)
		}
	}
}

// nodeIn reads node id of run from the store.
func (b *bundle) nodeIn(t *testing.T, run string, id int64) store.Node {
	t.Helper()
	n, err := b.app.Store.GetNode(b.ctx, run, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// busy reports whether a node of the host's run can still progress.
func busy(h *tree.Host) bool {
	for _, n := range h.Nodes() {
		if !n.State.Terminal() && n.State != tree.StatePaused {
			return true
		}
	}
	return false
}

func TestNodeSessionsRecordTheirNode(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "count", "prompt": "count to two"})), complete("draft"), complete("final")},
		2: {complete("two")},
	})
	if r := b.drive(t); r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	for _, id := range []int64{1, 2} {
		n := b.node(t, id)
		s, err := b.app.Store.GetSession(b.ctx, n.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if !s.OwnedByNode() || s.RunID != n.RunID || s.NodeID != id {
			t.Fatalf("session %s of #%d is owned by run %q node %d", s.ID, id, s.RunID, s.NodeID)
		}
	}
	// A conversation is no node's, even with an id shaped like one.
	conv, err := b.app.CreateSession(b.ctx, "chat.2", app.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := b.app.Store.GetSession(b.ctx, conv.ID); err != nil || s.OwnedByNode() {
		t.Fatalf("conversation %+v, %v", s, err)
	}
}

// TestSpawnRunAgainFindsItsNode: spawn, fork and ask are run again after
// a crash (tool.Idempotent), so a call with the id of one that already
// created a node under the same parent returns that node instead of a
// second one, in the process that made it and in the next one, which
// knows the node only from the store. The same call id under another
// parent is another call.
func TestSpawnRunAgainFindsItsNode(t *testing.T) {
	t.Parallel()
	b := setup(t, script{})
	id := "sess-call-ids"
	callTool := func(h *tree.Host, caller int64, name, callID string, args map[string]any) string {
		t.Helper()
		ts := h.Tools()
		if caller != 1 {
			var err error
			if ts, err = h.NodeTools(caller); err != nil {
				t.Fatalf("tools of #%d: %v", caller, err)
			}
		}
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range ts {
			if tl.Info().Name == name {
				res := tl.Run(b.ctx, tool.Call{ID: callID, Input: raw})
				if res.IsError {
					t.Fatalf("%s %s as #%d: %s", name, callID, caller, res.Content)
				}
				return res.Content
			}
		}
		t.Fatalf("#%d has no tool %s", caller, name)
		return ""
	}
	// Nothing starts: every child waits for the unanswered ask #2.
	held := func(goal string) map[string]any {
		return map[string]any{"goal": goal, "prompt": "p", "blocked_by": []string{"#2"}}
	}
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: id, SessionID: id, Workspace: b.app.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		caller         int64
		tool, call, id string
	}{
		{1, "ask", "c0", `{"id": "#2"}`},
		{1, "spawn", "c1", `{"id": "#3"}`},
		{1, "fork", "c2", `{"id": "#4"}`},
		{1, "spawn", "c1", `{"id": "#3"}`}, // run again
		{1, "ask", "c0", `{"id": "#2"}`},
		{3, "spawn", "c1", `{"id": "#5"}`}, // another parent's call
		{3, "spawn", "c1", `{"id": "#5"}`},
	}
	for i, s := range steps {
		args := held(fmt.Sprintf("step %d", i))
		if s.tool == "ask" {
			args = map[string]any{"question": "go?"}
		}
		if got := callTool(h, s.caller, s.tool, s.call, args); got != s.id {
			t.Fatalf("step %d: %s %s as #%d gave %s, want %s", i, s.tool, s.call, s.caller, got, s.id)
		}
	}
	h.Close()

	h2, err := b.engine.Host(b.ctx, tree.HostOptions{ID: id, SessionID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	for _, s := range []struct {
		caller   int64
		call, id string
	}{{1, "c2", `{"id": "#4"}`}, {3, "c1", `{"id": "#5"}`}, {1, "c3", `{"id": "#6"}`}, {4, "c2", `{"id": "#7"}`}} {
		if got := callTool(h2, s.caller, "spawn", s.call, held("after reopening")); got != s.id {
			t.Fatalf("after reopening: spawn %s as #%d gave %s, want %s", s.call, s.caller, got, s.id)
		}
	}
	if n := len(h2.Nodes()); n != 6 {
		t.Fatalf("%d nodes besides the host, want 6", n)
	}
}
