package web_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
	"github.com/arbor-run/arbor/internal/web"
)

// askTree: the root spawns an audit, asks a question that waits for the
// audit, and forks a comparison that needs both.
func askTree() treetest.Script {
	return treetest.Script{
		1: {
			calls(
				call("spawn", map[string]any{"goal": "Audit the API", "prompt": "Count endpoints."}),
				call("ask", map[string]any{"question": "How many users?", "options": []any{"<1K", "10K-100K"}, "blocked_by": []any{"#2"}}),
				call("fork", map[string]any{"goal": "Compare", "prompt": "Compare.", "blocked_by": []any{"#2", "#3"}})),
			complete("draft"),
			complete("RECOMMENDATION: migrate"),
		},
		2: {complete("47 endpoints")},
		4: {complete("GraphQL fits 10K-100K users")},
	}
}

// TestRunLifecycleOverAPI starts a run, watches it over SSE, answers its
// ask and reads the tree, a node's transcript and the runs list.
func TestRunLifecycleOverAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, askTree())
	var started web.Started
	sawTool := false
	if code := b.do("POST", "/api/runs", web.NewRun{Goal: "Should we migrate?", MaxTokens: 1_000_000}, &started); code != http.StatusCreated || started.ID == "" {
		t.Fatalf("start: %d %+v", code, started)
	}
	s := b.stream(started.ID)
	act := b.streamQuery(started.ID, "activity=4")
	b.waitNode(s, started.ID, 3, "active")
	d := b.run(started.ID)
	if d.Status != "running" || !d.Here || len(d.Nodes) != 4 {
		t.Fatalf("run while asking: %+v", d.RunSummary)
	}
	if n := nodeOf(d, 4); n.State != "pending" || len(n.BlockedBy) != 2 {
		t.Fatalf("#4 before the answer: %+v", n)
	}
	if n := nodeOf(d, 3); n.Runner != "person" || n.Question != "How many users?" {
		t.Fatalf("#3: %+v", n)
	}
	var bad map[string]string
	if code := b.do("POST", "/api/runs/"+started.ID+"/nodes/2/answer", web.AnswerRequest{Answer: "x"}, &bad); code != http.StatusConflict {
		t.Fatalf("answering a task node: %d %v", code, bad)
	}
	b.mustDo("POST", "/api/runs/"+started.ID+"/nodes/3/answer", web.AnswerRequest{Answer: "10K-100K"}, nil)
	s.until(t, "#4 active", func(f sseFrame) bool { return nodeFrame(f, 4, "active") })
	for {
		f := s.next(t)
		if f.Event == "tool" || f.Event == "usage" || f.Event == "message" {
			t.Fatalf("activity frame on a stream that did not ask for it: %+v", f)
		}
		if f.Event == "run" && strings.Contains(f.Data, `"outcome":"complete"`) {
			break
		}
	}
	// The stream that asked for #4's activity saw its tool call, and no
	// other node's.
	for f := act.next(t); f.Event != "run"; f = act.next(t) {
		if f.Event == "tool" || f.Event == "usage" {
			var a web.ActivityFrame
			if err := json.Unmarshal([]byte(f.Data), &a); err != nil || a.Node != 4 {
				t.Fatalf("activity of another node: %s", f.Data)
			}
			if f.Event == "tool" && a.Tool == "complete" {
				sawTool = true
			}
		}
	}
	if !sawTool {
		t.Fatal("no tool frame of #4 on its activity stream")
	}

	d = b.run(started.ID)
	if d.Status != "complete" || d.Result != "RECOMMENDATION: migrate" || d.Tokens == 0 {
		t.Fatalf("finished run: %+v", d)
	}
	var n web.NodeDetail
	b.mustDo("GET", "/api/runs/"+started.ID+"/nodes/4", nil, &n)
	if !strings.Contains(n.Context, "10K-100K") || !strings.Contains(n.Context, "47 endpoints") || len(n.Transcript) < 2 || n.Usage.OutputTokens == 0 {
		t.Fatalf("#4 detail: context %q, %d messages, usage %+v", n.Context, len(n.Transcript), n.Usage)
	}
	var runs []web.RunSummary
	b.mustDo("GET", "/api/runs", nil, &runs)
	if len(runs) != 1 || runs[0].ID != started.ID || runs[0].Status != "complete" {
		t.Fatalf("runs: %+v", runs)
	}
	if code := b.do("GET", "/api/runs/nope", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown run: %d", code)
	}
	if code := b.do("GET", "/api/runs/"+started.ID+"/nodes/99", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown node: %d", code)
	}
	if code := b.do("POST", "/api/runs", map[string]any{"goal": " "}, nil); code != http.StatusBadRequest {
		t.Fatalf("empty goal: %d", code)
	}
	if code := b.do("POST", "/api/runs", map[string]any{"gaol": "typo"}, nil); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d", code)
	}
}

// TestApproveStopPauseFromAPI approves a write (once, then always for
// the session), pauses, resumes and stops nodes of a running tree.
func TestApproveStopPauseFromAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Script{
		1: {
			calls(call("spawn", map[string]any{"goal": "writer", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "sleeper", "prompt": "p"})),
			complete("draft"),
			complete("final"),
		},
		2: {
			calls(call("write_file", map[string]any{"path": "a.txt", "content": "one"})),
			calls(call("write_file", map[string]any{"path": "b.txt", "content": "two"})),
			calls(call("write_file", map[string]any{"path": "c.txt", "content": "three"})),
			complete("written"),
		},
		// After its resume the sleeper asks again, so it is still running
		// when it is stopped.
		3: {calls(call("ask_user", map[string]any{"question": "sleeper waits"})), calls(call("ask_user", map[string]any{"question": "sleeper waits again"}))},
	}, setupOpts{mode: "default"})
	var started web.Started
	b.mustDo("POST", "/api/runs", web.NewRun{Goal: "write things"}, &started)
	s := b.stream(started.ID)

	seen := map[string]bool{}
	frames := map[string]string{} // the interaction frames read, by interaction id
	// approval returns the next approval node #2 waits for: pending
	// already, or announced on the stream.
	approval := func() string {
		t.Helper()
		for {
			for _, in := range b.run(started.ID).Pending {
				if in.Approval != nil && !seen[in.ID] {
					seen[in.ID] = true
					return in.ID
				}
			}
			f := s.until(t, "approval", func(f sseFrame) bool { return f.Event == "interaction" && strings.Contains(f.Data, `"approval"`) })
			var in web.InteractionFrame
			if err := json.Unmarshal([]byte(f.Data), &in); err != nil || in.Node != 2 || in.Interaction.Approval.Tool != "write_file" {
				t.Fatalf("interaction frame %s: %v", f.Data, err)
			}
			frames[in.ID] = f.Data
		}
	}
	iid := approval()
	if code := b.do("POST", "/api/interactions/"+iid, map[string]any{}, nil); code != http.StatusBadRequest {
		t.Fatalf("empty resolution: %d", code)
	}
	b.mustDo("POST", "/api/interactions/"+iid, web.Resolution{Allow: ptr(true)}, nil)
	if code := b.do("POST", "/api/interactions/"+iid, web.Resolution{Allow: ptr(true)}, nil); code != http.StatusConflict {
		t.Fatalf("resolving twice: %d", code)
	}
	iid = approval()
	// The approval's JSON, in the run and in its frame, is snake_case
	// with the tool's kind by name. (The second approval's: the stream
	// surely was open when it was raised, so its frame comes; the first
	// can precede the stream, which then starts with a snapshot.) (it had Go's field names and the kind
	// as a number: {"CallID": …, "Kind": 1, "Target": {"Paths": …}}).
	if _, ok := frames[iid]; !ok {
		f := s.until(t, "the approval's frame", func(f sseFrame) bool {
			return f.Event == "interaction" && strings.Contains(f.Data, `"id":"`+iid+`"`)
		})
		frames[iid] = f.Data
	}
	var raw struct {
		Pending []struct {
			Approval map[string]json.RawMessage `json:"approval"`
		} `json:"pending"`
	}
	b.mustDo("GET", "/api/runs/"+started.ID, nil, &raw)
	var frame struct {
		Interaction struct {
			Approval map[string]json.RawMessage `json:"approval"`
		} `json:"interaction"`
	}
	if err := json.Unmarshal([]byte(frames[iid]), &frame); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]json.RawMessage{"frame": frame.Interaction.Approval}
	for _, in := range raw.Pending {
		if in.Approval != nil {
			got["GET"] = in.Approval
		}
	}
	for _, where := range []string{"GET", "frame"} {
		ap := got[where]
		keys := slices.Sorted(maps.Keys(ap))
		var target bytes.Buffer
		_ = json.Compact(&target, ap["target"])
		if strings.Join(keys, " ") != "call_id input kind reason suggested_rule target tool" ||
			string(ap["kind"]) != `"write"` || string(ap["tool"]) != `"write_file"` || target.String() != `{"paths":["b.txt"]}` {
			t.Fatalf("%s: approval %s", where, ap)
		}
	}
	b.mustDo("POST", "/api/interactions/"+iid, web.Resolution{Allow: ptr(true), Always: true}, nil)
	// The third write is allowed by the session rule: no approval; the
	// writer completes.
	b.waitNode(s, started.ID, 2, "complete")
	for name, want := range map[string]string{"a.txt": "one", "b.txt": "two", "c.txt": "three"} {
		if got, err := os.ReadFile(filepath.Join(b.ws, name)); err != nil || string(got) != want {
			t.Fatalf("%s: %q %v", name, got, err)
		}
	}

	var done web.Done
	b.mustDo("POST", "/api/runs/"+started.ID+"/nodes/3/pause", map[string]any{}, &done)
	if done.State != "paused" {
		t.Fatalf("pause: %+v", done)
	}
	if code := b.do("POST", "/api/runs/"+started.ID+"/nodes/3/pause", map[string]any{}, nil); code != http.StatusConflict {
		t.Fatalf("pausing twice: %d", code)
	}
	b.mustDo("POST", "/api/runs/"+started.ID+"/nodes/3/resume", map[string]any{}, &done)
	b.mustDo("POST", "/api/runs/"+started.ID+"/nodes/3/stop", map[string]any{}, &done)
	if done.State != "cancelled" {
		t.Fatalf("stop: %+v", done)
	}
	if code := b.do("POST", "/api/runs/"+started.ID+"/nodes/3/explode", map[string]any{}, nil); code != http.StatusNotFound {
		t.Fatalf("unknown action: %d", code)
	}
	s.until(t, "run frame", func(f sseFrame) bool { return f.Event == "run" })
	d := b.run(started.ID)
	if d.Status != "complete" || nodeOf(d, 3).State != "cancelled" {
		t.Fatalf("run %s, #3 %s", d.Status, nodeOf(d, 3).State)
	}
	// The run is no longer driven here: control is refused, resume too.
	if code := b.do("POST", "/api/runs/"+started.ID+"/nodes/1/stop", map[string]any{}, nil); code != http.StatusConflict {
		t.Fatalf("control of a finished run: %d", code)
	}
	if code := b.do("POST", "/api/runs/"+started.ID+"/resume", map[string]any{}, nil); code != http.StatusConflict {
		t.Fatalf("resume of a finished run: %d", code)
	}
	// A run that does not exist is 404, not "resume it here first".
	if code := b.do("POST", "/api/runs/nope/nodes/1/stop", map[string]any{}, nil); code != http.StatusNotFound {
		t.Fatalf("control of no run: %d, want 404", code)
	}
}

func ptr[T any](v T) *T { return &v }

// TestOversizedBodyIsRefusedAs413: a body over the API's 1 MiB is 413
// with an error saying so, on every endpoint that reads one, and starts
// nothing.
func TestOversizedBodyIsRefusedAs413(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Script{1: {complete("never run")}})
	big := strings.Repeat("a", 1<<20)
	for path, body := range map[string]any{
		"/api/runs":                       web.NewRun{Goal: big},
		"/api/runs/nope/nodes/1/answer":   web.AnswerRequest{Answer: big},
		"/api/runs/nope/interactions/i-1": web.Resolution{Answer: big},
		"/api/interactions/i-1":           web.Resolution{Answer: big},
	} {
		var e struct{ Error string }
		if code := b.do("POST", path, body, &e); code != http.StatusRequestEntityTooLarge || !strings.Contains(e.Error, "at most 1 MiB") {
			t.Errorf("POST %s: %d %q; want 413 and an error naming the limit", path, code, e.Error)
		}
	}
	var runs []web.RunSummary
	b.mustDo("GET", "/api/runs", nil, &runs)
	if len(runs) != 0 {
		t.Fatalf("an oversized start started runs: %+v", runs)
	}
}

// TestStopOfARunNobodyDrives: stopping a run no process drives is
// written to the store, as arbor stop writes it: a node is cancelled with
// what is under it and the run stays resumable; the whole run is
// cancelled.
func TestStopOfARunNobodyDrives(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Script{1: {complete("never run")}})
	other := b.otherProcess()
	e, _, err := other.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Create(b.ctx, tree.RunOptions{ID: "run-idle", Goal: "g", Model: "anthropic/claude-test", Workspace: b.ws})
	if err != nil {
		t.Fatal(err)
	}
	if _, html := b.get("/runs/" + r.ID); !strings.Contains(html, "Resume run") || !strings.Contains(html, "Cancel run") {
		t.Fatalf("the page of a run nobody drives offers no resume or cancel:\n%s", html)
	}
	// A headless session's run is continued by its conversation: its page
	// offers neither.
	h, err := e.Host(b.ctx, tree.HostOptions{ID: "sess-idle", SessionID: "sess-idle", Workspace: b.ws, New: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	h.Close()
	if d := b.run("sess-idle"); d.Status != store.RunIdle {
		t.Fatalf("a headless session's run nobody holds is shown %s, want idle", d.Status)
	}
	if _, html := b.get("/runs/sess-idle"); strings.Contains(html, "Resume run") || strings.Contains(html, "Cancel run") || !strings.Contains(html, "arbor headless -r sess-idle") {
		t.Fatalf("the page of a headless session's run:\n%s", html)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/2/stop", map[string]any{}, nil); code != http.StatusNotFound {
		t.Fatalf("stop of a node the run does not have: %d, want 404", code)
	}
	now := time.Now().UTC()
	for _, n := range []store.Node{
		{RunID: r.ID, ID: 2, ParentID: 1, Kind: tree.KindTask, Goal: "child", State: tree.StatePending, CreatedAt: now, UpdatedAt: now},
		{RunID: r.ID, ID: 3, ParentID: 2, Kind: tree.KindTask, Goal: "grandchild", State: tree.StatePending, CreatedAt: now, UpdatedAt: now},
		{RunID: r.ID, ID: 4, ParentID: 1, Kind: tree.KindTask, Goal: "sibling", State: tree.StatePending, CreatedAt: now, UpdatedAt: now},
	} {
		if err := b.app.Store.Commit(b.ctx, &r, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, html := b.get("/runs/" + r.ID + "/nodes/2"); !strings.Contains(html, "/nodes/2/stop") || strings.Contains(html, "/nodes/2/pause") {
		t.Fatalf("the page of a node of a run nobody drives offers no stop, or a pause:\n%s", html)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/2/stop", map[string]any{}, nil); code != http.StatusOK {
		t.Fatalf("stop of a node of a run nobody drives: %d, want 200", code)
	}
	if _, html := b.get("/runs/" + r.ID + "/nodes/2"); strings.Contains(html, "/nodes/2/stop") {
		t.Fatalf("the page of a stopped node still offers a stop:\n%s", html)
	}
	nodes, err := b.app.Store.Nodes(b.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		want := map[int64]store.NodeState{2: tree.StateCancelled, 3: tree.StateCancelled}[n.ID]
		if want == "" {
			want = tree.StatePending
		}
		if n.State != want {
			t.Fatalf("#%d is %s after the stop of #2, want %s", n.ID, n.State, want)
		}
	}
	if got, err := b.app.Store.GetRun(b.ctx, r.ID); err != nil || got.Status.Terminal() {
		t.Fatalf("run after the stop of #2: %+v %v; want it resumable", got, err)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/2/stop", map[string]any{}, nil); code != http.StatusConflict {
		t.Fatalf("a second stop of #2: %d, want 409", code)
	}
	if code := b.do("POST", "/api/runs/"+r.ID+"/nodes/1/stop", map[string]any{}, nil); code != http.StatusOK {
		t.Fatalf("stop of a run nobody drives: %d, want 200", code)
	}
	got, err := b.app.Store.GetRun(b.ctx, r.ID)
	if err != nil || got.Status != store.RunCancelled {
		t.Fatalf("run after the stop: %+v %v", got, err)
	}
	if n := len(b.llm.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times", n)
	}
}
