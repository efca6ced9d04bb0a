//go:build unix

package tree_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/tree"
)

// gatedStore holds the queued commits' waits while a gate is set, as a
// slow disk would: the commit is durable, and its events published, only
// once the gate opens.
type gatedStore struct {
	*countingStore
	gate atomic.Pointer[chan struct{}]
}

func (s *gatedStore) CommitAsync(ctx context.Context, r *store.Run, nodes ...store.Node) func() error {
	wait := s.countingStore.CommitAsync(ctx, r, nodes...)
	gate := s.gate.Load()
	return func() error {
		if gate != nil {
			<-*gate
		}
		return wait()
	}
}

// A spawn returns before its node is durable, and its events come after
// (the host agent's step goes on at once). Published waits for them, so
// that a front end which counts the live children from the events (the
// envelope's idle) sees the child its agent has just spawned.
func TestPublishedWaitsForTheEventsOfASpawn(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "arbor.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	gs := &gatedStore{countingStore: &countingStore{Store: st}}
	bus := agent.NewBus()
	answer := func(ctx context.Context, node int64, turn int) (llm.Message, error) {
		if turn == 0 {
			return completeWith("done"), nil
		}
		return noAnswer(node, turn)
	}
	e := tree.New(tree.Options{
		Store: gs, Agents: &benchAgents{store: gs, bus: bus, model: &benchModel{answer: answer}},
		Bus: bus, Broker: agent.NewBroker(bus),
	})
	var seen atomic.Bool
	sub := bus.Subscribe(func(ev agent.Event) {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.ID == 2 {
			seen.Store(true)
		}
	})
	t.Cleanup(sub.Close)
	h, err := e.Host(context.Background(), tree.HostOptions{ID: "sess", SessionID: "sess", Workspace: t.TempDir(), New: true})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	defer h.Close()

	gate := make(chan struct{})
	gs.gate.Store(&gate)
	if r := hostTool(t, h, "spawn", map[string]any{"goal": "count", "prompt": "count to two"}); r.IsError || !strings.Contains(r.Content, "#2") {
		t.Fatalf("spawn = %+v", r)
	}
	gs.gate.Store(nil)
	checking := make(chan struct{})
	saw := make(chan bool, 1)
	go func() {
		close(checking)
		h.Published()
		sub.Flush()
		saw <- seen.Load()
	}()
	<-checking
	close(gate)
	if !<-saw {
		t.Fatal("Published returned before the spawned node's events were published")
	}
}
