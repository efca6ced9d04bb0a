package tree_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

type script = treetest.Script

var (
	nodeOf         = treetest.NodeOf
	assistantTurns = treetest.Turns
	call           = treetest.Call
	calls          = treetest.Calls
	complete       = treetest.Complete
)

type bundle struct {
	ctx    context.Context
	srv    *llmtest.Server
	app    *app.App
	engine *tree.Engine
	run    store.Run

	sub    *agent.Subscription
	mu     sync.Mutex
	events []agent.Event
}

type setupOpts struct {
	budgetTokens int64
	budgetUSD    float64
	// model is the run's model (default anthropic/claude-test, which has
	// no price).
	model       string
	maxParallel int
	goal        string
	nodeTimeout time.Duration
	// config, when set, is written as the user's config file.
	config string
	// respond, when set, answers the model requests instead of the script.
	respond func(llmtest.Request) llmtest.Turn
}

func setup(t *testing.T, s script, opts ...setupOpts) *bundle {
	t.Helper()
	o := setupOpts{goal: "the goal"}
	if len(opts) > 0 {
		o = opts[0]
		if o.goal == "" {
			o.goal = "the goal"
		}
	}
	if o.model == "" {
		o.model = "anthropic/claude-test"
	}
	respond := o.respond
	if respond == nil {
		respond = treetest.Responder(s)
	}
	srv := llmtest.NewServerFunc(respond)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	env := map[string]string{
		"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key-123",
		"OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "test-key-456",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home,
	}
	if err := mkdir(ws); err != nil {
		t.Fatal(err)
	}
	if o.config != "" {
		dir := filepath.Join(home, "config", "arbor")
		if err := mkdir(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(o.config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := app.Open(context.Background(), app.Options{
		Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: o.model, Mode: "trust"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	e, _, err := a.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	b := &bundle{ctx: context.Background(), srv: srv, app: a, engine: e}
	b.sub = a.Bus.Subscribe(func(ev agent.Event) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.events = append(b.events, ev)
	})
	t.Cleanup(b.sub.Close)
	b.run, err = e.Create(b.ctx, tree.RunOptions{ID: "run-" + strings.ReplaceAll(t.Name(), "/", "-"), Goal: o.goal, MaxTokens: o.budgetTokens, BudgetUSD: o.budgetUSD, MaxParallel: o.maxParallel, NodeTimeout: o.nodeTimeout, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *bundle) drive(t *testing.T) store.Run {
	t.Helper()
	r, err := b.engine.Drive(b.ctx, b.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (b *bundle) node(t *testing.T, id int64) store.Node {
	t.Helper()
	n, err := b.app.Store.GetNode(b.ctx, b.run.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// requests returns the recorded requests of node id, in order.
func (b *bundle) requests(id int64) []llmtest.Request {
	var out []llmtest.Request
	for _, r := range b.srv.Requests() {
		if nodeOf(r) == id {
			out = append(out, r)
		}
	}
	return out
}

// toolResult returns the content of the first tool result in node id's
// request number i.
func (b *bundle) lastToolResults(t *testing.T, id int64, i int) string {
	t.Helper()
	reqs := b.requests(id)
	if i >= len(reqs) {
		t.Fatalf("#%d made %d requests, want more than %d", id, len(reqs), i)
	}
	return reqs[i].LastUserText()
}

func (b *bundle) transitions(id int64) []string {
	b.sub.Flush()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, ev := range b.events {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.ID == id && c.From != c.Node.State {
			out = append(out, string(c.Node.State))
		}
	}
	return out
}

func wantState(t *testing.T, n store.Node, state store.NodeState) {
	t.Helper()
	if n.State != state {
		t.Fatalf("#%d is %s (error %q), want %s", n.ID, n.State, n.Error, state)
	}
}

func mkdir(p string) error { return os.MkdirAll(p, 0o755) }
