package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
	"github.com/arbor-run/arbor/internal/web"
)

// TestRunOfAnotherProcessIsFollowed: a run that another process drives
// (here a second app on the same database) is shown from the store, its
// changes reach the stream, and steering it from the server is refused
// naming its owner: only the lease holder changes a run.
func TestRunOfAnotherProcessIsFollowed(t *testing.T) {
	t.Parallel()
	followRunOfAnotherProcess(t, setupOpts{})
}

// TestRunOfAnotherProcessIsFollowedOnPostgres: the same on PostgreSQL,
// where the watcher does not poll: every frame of the other process's run
// reaches the stream through LISTEN/NOTIFY.
func TestRunOfAnotherProcessIsFollowedOnPostgres(t *testing.T) {
	t.Parallel()
	followRunOfAnotherProcess(t, setupOpts{store: pgtest.DSN(t)})
}

func followRunOfAnotherProcess(t *testing.T, o setupOpts) {
	t.Helper()
	b := setup(t, treetest.Script{
		1: {
			calls(call("ask", map[string]any{"question": "Which region?"})),
			complete("draft"),
			complete("deploy to eu"),
		},
	}, o)
	other := b.otherProcess()
	e, _, err := other.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Create(context.Background(), tree.RunOptions{ID: "other-run", Goal: "pick a region", Workspace: b.ws})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan store.Run, 1)
	go func() {
		fin, _ := e.Drive(context.Background(), r.ID)
		done <- fin
	}()
	s := b.stream(r.ID)
	b.waitNode(s, r.ID, 2, "active")
	d := b.run(r.ID)
	if d.Here || d.Owner == nil || d.Status != "running" {
		t.Fatalf("run of another process: here %v owner %v status %s", d.Here, d.Owner, d.Status)
	}
	var refused map[string]string
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/1/pause", map[string]any{}, &refused); code != http.StatusConflict || !strings.Contains(refused["error"], "driven by pid") {
		t.Fatalf("pause of another process's run: %d %v", code, refused)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/resume", map[string]any{}, &refused); code != http.StatusConflict {
		t.Fatalf("resume of a run another process drives: %d %v", code, refused)
	}
	// The owner gets the answer (as arbor answer's socket would hand it).
	if err := e.Answer(context.Background(), r.ID, 2, "eu"); err != nil {
		t.Fatal(err)
	}
	s.until(t, "#2 complete", func(f sseFrame) bool { return nodeFrame(f, 2, "complete") })
	s.until(t, "run frame", func(f sseFrame) bool { return f.Event == "run" && strings.Contains(f.Data, "deploy to eu") })
	if fin := <-done; fin.Status != store.RunComplete {
		t.Fatalf("run %+v", fin)
	}
}

// TestResumeInterruptedRun: a run another process left interrupted (its
// Ctrl-C) is resumed from the API and driven here: then answers go to
// this process's engine and it completes.
func TestResumeInterruptedRun(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Script{
		1: {
			calls(call("ask", map[string]any{"question": "Which region?"})),
			complete("draft"),
			complete("deploy to us"),
		},
	})
	other := b.otherProcess()
	e, _, err := other.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Create(context.Background(), tree.RunOptions{ID: "interrupted-run", Goal: "pick a region", Workspace: b.ws})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan store.Run, 1)
	go func() {
		fin, _ := e.Drive(ctx, r.ID)
		done <- fin
	}()
	s := b.stream(r.ID)
	b.waitNode(s, r.ID, 2, "active")
	// Interrupt only once #1 recorded its draft: cut short inside its
	// complete call, #1 would ask the model again on resume (as it should)
	// and run past the script's turns.
	b.waitNode(s, r.ID, 1, "waiting")
	cancel() // the other process's Ctrl-C
	if fin := <-done; fin.Status != store.RunInterrupted {
		t.Fatalf("after cancel: %s", fin.Status)
	}
	if d := b.run(r.ID); d.Status != "interrupted" || d.Here {
		t.Fatalf("before resume: %s here %v", d.Status, d.Here)
	}
	b.mustDo("POST", "/api/runs/"+r.ID+"/resume", map[string]any{}, nil)
	if d := b.run(r.ID); d.Status != "running" || !d.Here {
		t.Fatalf("after resume: %s here %v", d.Status, d.Here)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/resume", map[string]any{}, nil); code != http.StatusConflict {
		t.Fatalf("resuming twice: %d", code)
	}
	b.mustDo("POST", "/api/runs/"+r.ID+"/nodes/2/answer", map[string]any{"answer": "us"}, nil)
	s.until(t, "run frame", func(f sseFrame) bool { return f.Event == "run" && strings.Contains(f.Data, "deploy to us") })
}

// TestRunOfAnotherProcessIsSteered: a run that another process drives
// with its owner socket served (as arbor run does) is followed through a
// subscription to its events — agent activity and interactions too,
// which the store does not show — and steered through the socket: its
// question answered, a node paused and resumed; refusals keep their
// status codes.
func TestRunOfAnotherProcessIsSteered(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Script{
		1: {calls(call("spawn", map[string]any{"goal": "child", "prompt": "p"})), complete("draft"), complete("final")},
		2: {
			calls(call("ask_user", map[string]any{"question": "first question"})),
			calls(call("ask_user", map[string]any{"question": "second question"})),
			complete("child done"),
		},
	})
	other := b.otherProcess()
	e, _, err := other.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Create(context.Background(), tree.RunOptions{ID: "steered-run", Goal: "ask twice", Workspace: b.ws})
	if err != nil {
		t.Fatal(err)
	}
	socket := other.AnswerSocket(r.ID)
	done := make(chan store.Run, 1)
	go func() {
		fin, _ := e.DriveWith(context.Background(), r.ID, tree.DriveOptions{Addr: socket, Serve: func() func() {
			return owner.Serve(context.Background(), owner.Options{Path: socket, RunID: r.ID, Engine: e, Bus: other.Bus, Diag: io.Discard})
		}})
		done <- fin
	}()
	s := b.streamQuery(r.ID, "activity=all")
	// Once the watcher's subscription streams, the stream is told to read
	// the run; the owner's activity reaches it from then on.
	s.until(t, "resync", func(f sseFrame) bool { return f.Event == "resync" })
	question := func(text string) string {
		t.Helper()
		for {
			for _, in := range b.run(r.ID).Pending {
				if in.Question != nil && in.Question.Question == text {
					return in.ID
				}
			}
			// A resync says "read the run again", as a browser does: the
			// question may have been asked before the subscription started.
			s.until(t, "interaction", func(f sseFrame) bool {
				return f.Event == "resync" || f.Event == "interaction" && strings.Contains(f.Data, text)
			})
		}
	}
	iid := question("first question")
	if code := b.do("POST", "/api/runs/"+r.ID+"/interactions/"+iid, web.Resolution{Allow: ptr(true)}, nil); code != http.StatusBadRequest {
		t.Fatalf("an approval for a question: %d", code)
	}
	b.mustDo("POST", "/api/runs/"+r.ID+"/interactions/"+iid, web.Resolution{Answer: "go"}, nil)
	if code := b.do("POST", "/api/runs/"+r.ID+"/interactions/"+iid, web.Resolution{Answer: "go"}, nil); code != http.StatusConflict {
		t.Fatalf("answering twice: %d", code)
	}
	// Activity reaches the stream only from the owner's events.
	s.until(t, "tool frame", func(f sseFrame) bool { return f.Event == "tool_done" && strings.Contains(f.Data, "ask_user") })
	// A stream that joins the streaming subscription is told to read the
	// run once: what happened before it joined came in no frame of its.
	late := b.stream(r.ID)
	late.until(t, "resync", func(f sseFrame) bool { return f.Event == "resync" })

	question("second question")
	var done2 web.Done
	b.mustDo("POST", "/api/runs/"+r.ID+"/nodes/2/pause", map[string]any{}, &done2)
	if done2.State != "paused" {
		t.Fatalf("pause: %+v", done2)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/2/pause", map[string]any{}, nil); code != http.StatusConflict {
		t.Fatalf("pausing twice: %d", code)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/9/stop", map[string]any{}, nil); code != http.StatusNotFound {
		t.Fatalf("unknown node: %d", code)
	}
	s.until(t, "#2 paused", func(f sseFrame) bool { return nodeFrame(f, 2, "paused") })
	b.mustDo("POST", "/api/runs/"+r.ID+"/nodes/2/resume", map[string]any{}, nil)
	s.until(t, "#2 complete", func(f sseFrame) bool { return nodeFrame(f, 2, "complete") })
	s.until(t, "run frame", func(f sseFrame) bool { return f.Event == "run" && strings.Contains(f.Data, "final") })
	if fin := <-done; fin.Status != store.RunComplete {
		t.Fatalf("run %+v", fin)
	}
}
