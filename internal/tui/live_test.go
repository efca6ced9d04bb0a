package tui

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// screenWriter is a program's output; seen is closed once the output,
// without styling, contains want.
type screenWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func newScreenWriter(want string) *screenWriter {
	return &screenWriter{want: want, seen: make(chan struct{})}
}

func (w *screenWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(ansi.Strip(w.buf.String()), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *screenWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return ansi.Strip(w.buf.String())
}

// liveBundle is a Live on pipes.
type liveBundle struct {
	live  *Live
	keys  *os.File
	out   *screenWriter
	res   *fakeResolver
	ran   chan error
	inter chan struct{}
}

func setupLive(t *testing.T, ctx context.Context, want string) *liveBundle {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	b := &liveBundle{keys: w, out: newScreenWriter(want), res: &fakeResolver{got: make(chan resolution, 1)}, ran: make(chan error, 1), inter: make(chan struct{}, 1)}
	b.live = NewLive(LiveOptions{RunID: "r1", In: r, Out: b.out, Resolver: b.res, Title: "Compare API styles",
		OnInterrupt: func() { b.inter <- struct{}{} }})
	return b
}

func (b *liveBundle) run(ctx context.Context) {
	go func() { b.ran <- b.live.Run(ctx) }()
}

func TestLive(t *testing.T) {
	t.Parallel()

	t.Run("renders, answers from the keyboard, quits", func(t *testing.T) {
		t.Parallel()
		b := setupLive(t, context.Background(), "wants to run")
		// events before Run are kept
		b.live.Handle(changed(0, "", tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Compare REST and GraphQL", State: tree.StateActive, SessionID: "s1"}))
		b.live.Handle(&agent.TextDelta{Meta: at(1), Text: "ignored"})
		b.run(context.Background())
		b.live.Handle(approvalRequested("req_1", "s1"))

		<-b.out.seen
		if _, err := b.keys.WriteString("y"); err != nil {
			t.Fatal(err)
		}
		got := <-b.res.got
		if got.id != "req_1" || got.r.Approval == nil || !got.r.Approval.Allow {
			t.Fatalf("resolved %+v", got)
		}
		if _, err := b.keys.Write([]byte{3}); err != nil { // Ctrl-C
			t.Fatal(err)
		}
		<-b.inter

		b.live.Handle(changed(2, tree.StateActive, tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Compare REST and GraphQL", State: tree.StateComplete, SessionID: "s1", Result: "REST for caching"}))
		b.live.Handle(&tree.RunFinished{Meta: at(3), RunID: "r1", Outcome: "complete"})
		b.live.Quit()
		if err := <-b.ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
		s := b.out.text()
		for _, want := range []string{"Compare API styles", "#1", "Compare REST and GraphQL", "shell", "run complete"} {
			if !strings.Contains(s, want) {
				t.Fatalf("output lacks %q:\n%s", want, s)
			}
		}
		b.live.Quit() // again: harmless
	})

	t.Run("context end stops Run", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		b := setupLive(t, ctx, "Waiting for the root")
		b.live.Handle(changed(0, "", tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Waiting for the root", State: tree.StatePending}))
		b.run(ctx)
		<-b.out.seen
		cancel()
		if err := <-b.ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})

	t.Run("shows failed MCP servers", func(t *testing.T) {
		t.Parallel()
		b := setupLive(t, context.Background(), "MCP server github failed")
		b.live.SetMCPFailures([]MCPFailure{{Name: "github", Error: "did not start within 30s (start_timeout)"}})
		b.run(context.Background())
		<-b.out.seen
		b.live.SetMCPFailures(nil) // it came back after a reload
		b.live.Quit()
		if err := <-b.ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if s := b.out.text(); !strings.Contains(s, "MCP server github failed: did not start within 30s (start_timeout) (its tools are not available)") {
			t.Fatalf("output lacks the failure:\n%s", s)
		}
	})

	t.Run("quit before run", func(t *testing.T) {
		t.Parallel()
		b := setupLive(t, context.Background(), "arbor")
		b.live.Quit()
		b.run(context.Background())
		if err := <-b.ran; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})

	t.Run("handle never blocks", func(t *testing.T) {
		t.Parallel()
		l := NewLive(LiveOptions{RunID: "r1"})
		bus := agent.NewBus()
		sub := bus.Subscribe(l.Handle)
		t.Cleanup(sub.Close)
		br := agent.NewBroker(bus)
		for range 10000 {
			bus.Publish(usage(0, "s1", 1, 1, 0, true))
		}
		// a broker resolving through the bus while nothing drains the view
		go func() { _, _ = br.For("s1").Ask(context.Background(), tool.Question{Question: "?"}) }()
		for len(br.Pending()) == 0 {
			<-l.wake
		}
		if err := br.Resolve(br.Pending()[0].ID, agent.Response{Answer: &tool.Answer{Text: "ok"}}); err != nil {
			t.Fatal(err)
		}
		sub.Flush()
		batch, _, _ := l.take()
		if len(batch) < 10002 {
			t.Fatalf("%d events queued", len(batch))
		}
	})
}
