package owner_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

var (
	call     = treetest.Call
	calls    = treetest.Calls
	complete = treetest.Complete
)

type bundle struct {
	app    *app.App
	engine *tree.Engine
	run    string
	socket string
	ws     string
	events chan owner.Event
	seen   []owner.Event  // streamed so far
	used   map[int]bool   // indexes of seen that next returned
	done   chan store.Run // the drive's end
	subEnd chan error     // the subscription's end
}

// setup drives a run of script s in mode "default" (writes need an
// approval) with its owner socket served, and subscribes to its events.
func setup(t *testing.T, s treetest.Script) *bundle {
	t.Helper()
	return setupWith(t, treetest.Responder(s), 0)
}

// setupWith is setup with a responder and the socket's write timeout.
func setupWith(t *testing.T, respond func(llmtest.Request) llmtest.Turn, writeTimeout time.Duration) *bundle {
	t.Helper()
	srv := llmtest.NewServerFunc(respond)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key-123",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home,
	}
	a, err := app.Open(context.Background(), app.Options{
		Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: "default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	e, _, err := a.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Create(context.Background(), tree.RunOptions{ID: "r-owner", Goal: "steer me", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{app: a, engine: e, run: r.ID, socket: a.AnswerSocket(r.ID), ws: ws,
		events: make(chan owner.Event, 10000), used: map[int]bool{}, done: make(chan store.Run, 1), subEnd: make(chan error, 1)}
	live := make(chan struct{})
	go func() {
		fin, err := e.DriveWith(context.Background(), r.ID, tree.DriveOptions{Addr: b.socket, Serve: func() func() {
			stop := owner.Serve(context.Background(), owner.Options{Path: b.socket, RunID: r.ID, Engine: e, Bus: a.Bus, Diag: os.Stderr, WriteTimeout: writeTimeout})
			close(live)
			return stop
		}})
		if err != nil {
			t.Error(err)
		}
		b.done <- fin
	}()
	<-live
	subscribed := make(chan struct{})
	go func() {
		b.subEnd <- owner.Client{Socket: b.socket}.Subscribe(context.Background(),
			func(uint64) { close(subscribed) },
			func(e owner.Event) { b.events <- e })
	}()
	<-subscribed
	return b
}

func (b *bundle) client() owner.Client { return owner.Client{Socket: b.socket} }

// next returns the first streamed event that match accepts and next did
// not return before (events may come in another order than a test
// waits for them).
func (b *bundle) next(t *testing.T, what string, match func(owner.Event) bool) owner.Event {
	t.Helper()
	for i := 0; ; i++ {
		if i < len(b.seen) {
			if !b.used[i] && match(b.seen[i]) {
				b.used[i] = true
				return b.seen[i]
			}
			continue
		}
		select {
		case e := <-b.events:
			b.seen = append(b.seen, e)
			i--
		case <-time.After(30 * time.Second): // hang guard
			last := ""
			if len(b.seen) > 0 {
				j, _ := json.Marshal(b.seen[len(b.seen)-1])
				last = string(j)
			}
			t.Fatalf("no %s streamed (%d events; the last %.300s)", what, len(b.seen), last)
		}
	}
}

func (b *bundle) interaction(t *testing.T, node int64, kind agent.InteractionKind) agent.Interaction {
	t.Helper()
	e := b.next(t, "interaction", func(e owner.Event) bool {
		return e.InteractionRequested != nil && e.Node == node && e.InteractionRequested.Interaction.Kind == kind
	})
	return e.InteractionRequested.Interaction
}

func (b *bundle) state(t *testing.T, node int64, st tree.NodeState) {
	t.Helper()
	b.next(t, "node change", func(e owner.Event) bool {
		return e.NodeChanged != nil && e.NodeChanged.Node.ID == node && e.NodeChanged.Node.State == st
	})
}

// raw sends one request line and returns the reply.
func (b *bundle) raw(t *testing.T, line string) owner.Reply {
	t.Helper()
	conn, err := net.Dial("unix", b.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	var rep owner.Reply
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

func allow() agent.Response { return agent.Response{Approval: &tool.Approval{Allow: true}} }

// TestSteerThroughSocket: approvals, stop, pause and resume and answers
// of a run go through its owner's socket to its engine; stale ids and
// wrong states are refused with coded errors and change nothing; the
// subscription streams the run's events, and only the run's, to its end.
func TestSteerThroughSocket(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Script{
		1: {
			calls(call("spawn", map[string]any{"goal": "writer", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "waiter", "prompt": "p"}),
				call("ask", map[string]any{"question": "Which region?"})),
			complete("draft"),
			complete("final"),
		},
		2: {calls(call("write_file", map[string]any{"path": "a.txt", "content": "one"})), complete("written")},
		3: {calls(call("ask_user", map[string]any{"question": "waiter waits"})), calls(call("ask_user", map[string]any{"question": "waiter waits again"}))},
	})
	ctx := context.Background()
	c := b.client()
	// Not the run's events: another run's on the same bus.
	b.app.Bus.Publish(&tree.NodeChanged{RunID: "another-run", Node: tree.NodeView{ID: 7, State: tree.StateActive}})

	t.Run("approve", func(t *testing.T) {
		in := b.interaction(t, 2, agent.KindApproval)
		if in.Approval.Tool != "write_file" {
			t.Fatalf("approval %+v", in.Approval)
		}
		pending, err := c.Pending(ctx)
		if err != nil || len(pending) == 0 {
			t.Fatalf("pending %v %v", pending, err)
		}
		if err := c.Resolve(ctx, in.ID, agent.Response{Answer: &tool.Answer{Text: "yes"}}); !errors.Is(err, agent.ErrWrongResponse) {
			t.Fatalf("wrong response: %v", err)
		}
		if err := c.Resolve(ctx, "i-none", allow()); !errors.Is(err, agent.ErrUnknownInteraction) {
			t.Fatalf("unknown id: %v", err)
		}
		if err := c.Resolve(ctx, in.ID, allow()); err != nil {
			t.Fatal(err)
		}
		if err := c.Resolve(ctx, in.ID, allow()); !errors.Is(err, agent.ErrUnknownInteraction) {
			t.Fatalf("resolving twice: %v", err)
		}
		b.state(t, 2, tree.StateComplete)
		if got, err := os.ReadFile(filepath.Join(b.ws, "a.txt")); err != nil || string(got) != "one" {
			t.Fatalf("a.txt %q %v", got, err)
		}
	})
	t.Run("pause resume stop", func(t *testing.T) {
		b.interaction(t, 3, agent.KindQuestion)
		if st, err := c.Control(ctx, 3, tree.OpPause); err != nil || st != tree.StatePaused {
			t.Fatalf("pause: %s %v", st, err)
		}
		if _, err := c.Control(ctx, 3, tree.OpPause); !errors.Is(err, tree.ErrBadState) {
			t.Fatalf("pausing twice: %v", err)
		}
		if _, err := c.Control(ctx, 99, tree.OpStop); !errors.Is(err, tree.ErrUnknownNode) {
			t.Fatalf("unknown node: %v", err)
		}
		if _, err := c.Control(ctx, 3, tree.Op("explode")); !errors.Is(err, tree.ErrBadState) {
			t.Fatalf("unknown op: %v", err)
		}
		if _, err := c.Control(ctx, 3, tree.OpResume); err != nil {
			t.Fatal(err)
		}
		b.interaction(t, 3, agent.KindQuestion) // asked again after the resume
		if st, err := c.Control(ctx, 3, tree.OpStop); err != nil || st != tree.StateCancelled {
			t.Fatalf("stop: %s %v", st, err)
		}
	})
	t.Run("protocol errors", func(t *testing.T) {
		if rep := b.raw(t, `{"v":1,"kind":"explode"}`); rep.OK || rep.Code != owner.CodeUnknownKind {
			t.Fatalf("unknown kind: %+v", rep)
		}
		if rep := b.raw(t, `{"v":99,"kind":"pending"}`); rep.OK || rep.Code != owner.CodeVersion {
			t.Fatalf("newer version: %+v", rep)
		}
		if rep := b.raw(t, `not json`); rep.OK || rep.Code != owner.CodeBadRequest {
			t.Fatalf("not json: %+v", rep)
		}
		if rep := b.raw(t, `{"v":1,"kind":"resolve","interaction":"i-1"}`); rep.OK || rep.Code != owner.CodeBadRequest {
			t.Fatalf("resolve without response: %+v", rep)
		}
	})
	t.Run("answer of version 0", func(t *testing.T) {
		// The answer socket's first protocol: no version, no kind. The
		// refusal first: the answer ends the run, and its socket with it.
		if rep := b.raw(t, `{"node":2,"answer":"us"}`); rep.OK || rep.Code != owner.CodeBadState {
			t.Fatalf("answering a task node: %+v", rep)
		}
		if rep := b.raw(t, `{"node":4,"answer":"eu"}`); !rep.OK {
			t.Fatalf("answer: %+v", rep)
		}
	})
	t.Run("stream ends with the run", func(t *testing.T) {
		var other bool
		b.next(t, "run end", func(e owner.Event) bool {
			other = other || e.NodeChanged != nil && e.NodeChanged.RunID != b.run
			return e.RunFinished != nil
		})
		if other {
			t.Fatal("another run's event was streamed")
		}
		if fin := <-b.done; fin.Status != store.RunComplete {
			t.Fatalf("run %s %s", fin.Status, fin.Error)
		}
		if err := <-b.subEnd; err != nil {
			t.Fatalf("subscription ended with %v", err)
		}
		if err := c.Answer(ctx, 4, "late"); !errors.Is(err, owner.ErrUnreachable) {
			t.Fatalf("after the run: %v", err)
		}
	})
}

// TestStalledSubscriberIsDropped: a subscriber that stops reading while a
// 500-node run streams far more than the socket buffers neither slows the
// run nor the other subscriber: the owner drops it, the run completes,
// and the subscriber that reads gets every event to the run's end.
func TestStalledSubscriberIsDropped(t *testing.T) {
	t.Parallel()
	const children = 500
	spawns := make([]llmtest.ToolCall, children)
	for i := range spawns {
		spawns[i] = call("spawn", map[string]any{"goal": fmt.Sprintf("child %d", i), "prompt": "Say ok."})
	}
	respond := treetest.Responder(treetest.Script{1: {calls(spawns...), complete("draft"), complete("all done")}})
	children1 := func(req llmtest.Request) llmtest.Turn {
		if treetest.NodeOf(req) != 1 {
			return complete("ok")
		}
		return respond(req)
	}
	b := setupWith(t, children1, 5*time.Second) // long for the reader, short for the test
	stalled, err := net.Dial("unix", b.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := stalled.Write([]byte(`{"v":1,"kind":"subscribe"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	// b's own subscriber reads on; this one reads nothing until the end.
	b.next(t, "run end", func(e owner.Event) bool { return e.RunFinished != nil })
	if fin := <-b.done; fin.Status != store.RunComplete {
		t.Fatalf("run %s %s", fin.Status, fin.Error)
	}
	sc := bufio.NewScanner(stalled)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines, ended := 0, false
	for sc.Scan() {
		lines++
		var e owner.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.RunFinished != nil {
			ended = true
		}
	}
	if ended || lines < 2 {
		t.Fatalf("the stalled subscriber got %d lines (run end: %v): it should have been dropped midway", lines, ended)
	}
}
