package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpserver"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

type bundle struct {
	ctx    context.Context
	srv    *llmtest.Server
	app    *app.App
	engine *tree.Engine
}

// setup opens an app whose models answer from respond, in a temp home.
func setup(t *testing.T, respond func(llmtest.Request) llmtest.Turn) *bundle {
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
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: "trust"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	e, _, err := a.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: context.Background(), srv: srv, app: a, engine: e}
}

// client connects an MCP client to s over an in-memory transport.
func (b *bundle) client(t *testing.T, s *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(b.ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(b.ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rootServer is a root-mode server that creates a hosted run on the
// first spawn; hosts returns the runs it created.
func (b *bundle) rootServer(t *testing.T, id string) (*mcpserver.Server, func() []*tree.Host) {
	t.Helper()
	var mu sync.Mutex
	var hosts []*tree.Host
	s := mcpserver.New(mcpserver.Options{Version: "test", Engine: b.engine, Store: b.app.Store, Bus: b.app.Bus,
		Create: func(ctx context.Context) (*tree.Host, error) {
			h, err := b.engine.Host(ctx, tree.HostOptions{ID: id, Title: "mcp goal", Workspace: b.app.Workspace})
			if err != nil {
				return nil, err
			}
			h.Start()
			mu.Lock()
			defer mu.Unlock()
			hosts = append(hosts, h)
			return h, nil
		}})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range hosts {
			h.Close()
		}
		s.Close()
	})
	return s, func() []*tree.Host {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(hosts)
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	return callWith(t, cs, &mcp.CallToolParams{Name: name, Arguments: args})
}

func callWith(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s: %v", p.Name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// okf returns a check that a call succeeded, returning its text.
func okf(t *testing.T) func(text string, isErr bool) string {
	return func(text string, isErr bool) string {
		t.Helper()
		if isErr {
			t.Fatalf("tool error: %s", text)
		}
		return text
	}
}

// TestToolsAreTheTreeTools pins one source for the tools' texts: what an
// MCP client lists is what node agents see.
func TestToolsAreTheTreeTools(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Responder(nil))
	s, _ := b.rootServer(t, "run-tools")
	cs := b.client(t, s, nil)
	res, err := cs.ListTools(b.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	inproc := map[string]string{}
	for _, info := range b.engine.ToolInfos(1) {
		inproc[info.Name] = info.Description
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if d, ok := inproc[tl.Name]; ok && tl.Name != "complete" && d != tl.Description {
			t.Errorf("%s: MCP description %q, in-process %q", tl.Name, tl.Description, d)
		}
	}
	slices.Sort(names)
	want := []string{"ask", "complete", "fork", "modify", "pause", "read_node", "read_tree", "resume", "spawn", "stop", "wait"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	if text, isErr := call(t, cs, "read_tree", nil); !isErr || !strings.Contains(text, "no run yet") {
		t.Fatalf("read_tree before any run: %q (error %v), want a no-run error", text, isErr)
	}
}

// TestRootBuildsTreeAndWaits is an MCP client as the root of a run: three
// children, one blocked_by another, wait with progress, read_tree,
// complete; the runs resource announces the new run.
func TestRootBuildsTreeAndWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Responder(treetest.Script{
		2: {treetest.Complete("47 endpoints")},
		3: {treetest.Complete("GraphQL trade-offs")},
		4: {treetest.Complete("migrate slowly")},
	}))
	ok := okf(t)
	s, hosts := b.rootServer(t, "run-root")
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	progressed := make(chan struct{}, 1)
	updated := make(chan string, 100)
	cs := b.client(t, s, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params)
			mu.Unlock()
			select {
			case progressed <- struct{}{}:
			default:
			}
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- r.Params.URI:
			default:
			}
		},
	})
	if err := cs.Subscribe(b.ctx, &mcp.SubscribeParams{URI: "arbor://runs"}); err != nil {
		t.Fatal(err)
	}
	if text := ok(call(t, cs, "spawn", map[string]any{"goal": "Audit the API", "prompt": "count endpoints"})); !strings.Contains(text, "#2") {
		t.Fatalf("spawn: %s", text)
	}
	ok(call(t, cs, "spawn", map[string]any{"goal": "Research GraphQL", "prompt": "trade-offs"}))
	ok(call(t, cs, "spawn", map[string]any{"goal": "Recommend", "prompt": "decide", "blocked_by": []string{"#2", "#3"}}))
	if err := cs.Subscribe(b.ctx, &mcp.SubscribeParams{URI: "arbor://runs/run-root/tree"}); err != nil {
		t.Fatal(err)
	}

	p := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}}
	p.SetProgressToken("w1")
	text := ok(callWith(t, cs, p))
	for _, want := range []string{"All 3 nodes have ended", "47 endpoints", "GraphQL trade-offs", "migrate slowly"} {
		if !strings.Contains(text, want) {
			t.Fatalf("wait result lacks %q:\n%s", want, text)
		}
	}
	// The client hands notifications to their handler on goroutines of
	// its own: the last one may reach it after the call's result.
	final := func(got []*mcp.ProgressNotificationParams) bool {
		return len(got) > 0 && got[len(got)-1].Total == 3 && got[len(got)-1].ProgressToken == "w1"
	}
	guard := time.After(30 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(progress)
		mu.Unlock()
		if final(got) {
			break
		}
		select {
		case <-progressed:
		case <-guard:
			t.Fatalf("progress notifications %+v, want some for token w1 out of 3", got)
		}
	}
	// The dependent child got its dependencies' results.
	for _, r := range b.srv.Requests() {
		if treetest.NodeOf(r) == 4 && !(strings.Contains(r.Messages[0].Text(), "47 endpoints") && strings.Contains(r.Messages[0].Text(), "GraphQL trade-offs")) {
			t.Fatalf("#4 started without its dependencies' results:\n%s", r.Messages[0].Text())
		}
	}
	tr := ok(call(t, cs, "read_tree", nil))
	if strings.Count(tr, "[complete]") != 3 {
		t.Fatalf("read_tree:\n%s", tr)
	}
	ok(call(t, cs, "complete", map[string]any{"result": "migrate, slowly"}))
	if hs := hosts(); len(hs) != 1 || !hs[0].Ended() {
		t.Fatalf("hosts %v: want one, ended", hs)
	}
	r, err := b.app.Store.GetRun(b.ctx, "run-root")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunComplete || r.Result != "migrate, slowly" {
		t.Fatalf("run %s %q, want complete with the result", r.Status, r.Result)
	}
	if text, isErr := call(t, cs, "spawn", map[string]any{"goal": "late", "prompt": "x"}); !isErr || !strings.Contains(text, "ended") {
		t.Fatalf("spawn after complete: %q (error %v)", text, isErr)
	}

	res, err := cs.ReadResource(b.ctx, &mcp.ReadResourceParams{URI: "arbor://runs"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"id": "run-root"`) || !strings.Contains(res.Contents[0].Text, `"status": "complete"`) {
		t.Fatalf("arbor://runs: %v %v", res, err)
	}
	res, err = cs.ReadResource(b.ctx, &mcp.ReadResourceParams{URI: "arbor://runs/run-root/tree"})
	if err != nil || !strings.Contains(res.Contents[0].Text, "#4 [complete] spawn: Recommend") {
		t.Fatalf("tree resource: %v %v", res, err)
	}
	if _, err := cs.ReadResource(b.ctx, &mcp.ReadResourceParams{URI: "arbor://runs/nope/tree"}); err == nil {
		t.Fatal("reading the tree of an unknown run succeeded")
	}
	seen := map[string]bool{}
	for len(updated) > 0 {
		seen[<-updated] = true
	}
	if !seen["arbor://runs"] || !seen["arbor://runs/run-root/tree"] {
		t.Fatalf("resource updates %v, want both resources", seen)
	}
}

// TestWaitTimesOutAndIsCancellable: wait returns the states so far when
// its timeout passes, and a wait the client cancels (once the server is
// in it: a progress notification came) ends with the call.
func TestWaitTimesOutAndIsCancellable(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Responder(treetest.Script{3: {treetest.Complete("done quickly")}}))
	ok := okf(t)
	s, _ := b.rootServer(t, "run-wait")
	inWait := make(chan struct{}, 10)
	cs := b.client(t, s, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		inWait <- struct{}{}
	}})
	// An ask nobody answers never ends.
	ok(call(t, cs, "ask", map[string]any{"question": "size?"}))
	text := ok(call(t, cs, "wait", map[string]any{"ids": []string{"#2"}, "timeout_seconds": 0.2}))
	if !strings.Contains(text, "Timed out") || !strings.Contains(text, "0 of 1 nodes have ended") {
		t.Fatalf("wait: %s", text)
	}
	ok(call(t, cs, "spawn", map[string]any{"goal": "quick", "prompt": "x"}))
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"timeout_seconds": 3600}}
		p.SetProgressToken("c1")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	select {
	case <-inWait: // #3 ended: the server is waiting for #2
	case <-time.After(time.Minute): // hang guard
		t.Fatal("no progress from wait")
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled wait returned no error to its caller")
		}
	case <-time.After(time.Minute): // hang guard
		t.Fatal("a cancelled wait did not return")
	}
	// The server is still there for the next call.
	text = ok(call(t, cs, "wait", map[string]any{"ids": []string{"#3"}}))
	if !strings.Contains(text, "done quickly") {
		t.Fatalf("wait for #3: %s", text)
	}
	if text, isErr := call(t, cs, "wait", map[string]any{"ids": []string{"#9"}}); !isErr || !strings.Contains(text, "#9") {
		t.Fatalf("wait for an unknown node: %q (error %v)", text, isErr)
	}
}

// TestRootRunBudget: a run an MCP client hosts has arbor's budgets: when
// its children spent the run's tokens, the run ends and wait says so.
func TestRootRunBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Responder(treetest.Script{2: {
		{ToolCalls: []llmtest.ToolCall{treetest.Call("read_tree", map[string]any{})}, Usage: llmtest.Usage{Input: 1500, Output: 500}},
		treetest.Complete("never reached"),
	}}))
	ok := okf(t)
	var host *tree.Host
	s := mcpserver.New(mcpserver.Options{Version: "test", Engine: b.engine, Store: b.app.Store, Bus: b.app.Bus,
		Create: func(ctx context.Context) (*tree.Host, error) {
			h, err := b.engine.Host(ctx, tree.HostOptions{ID: "run-budget", Workspace: b.app.Workspace, MaxTokens: 1000})
			if err == nil {
				h.Start()
				host = h
			}
			return h, err
		}})
	t.Cleanup(func() {
		if host != nil {
			host.Close()
		}
		s.Close()
	})
	cs := b.client(t, s, nil)
	ok(call(t, cs, "spawn", map[string]any{"goal": "expensive", "prompt": "x"}))
	text := ok(call(t, cs, "wait", nil))
	if !strings.Contains(text, "The run has ended (budget") || !strings.Contains(text, "budget exhausted") {
		t.Fatalf("wait: %s", text)
	}
	r, err := b.app.Store.GetRun(b.ctx, "run-budget")
	if err != nil || r.Status != store.RunBudget {
		t.Fatalf("run %+v (%v), want status budget", r, err)
	}
	for _, req := range b.srv.Requests() {
		if treetest.NodeOf(req) == 2 && treetest.Turns(req) > 0 {
			t.Fatalf("#2 called the model again after the budget was spent")
		}
	}
}
