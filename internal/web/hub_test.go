package web

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/tree"
)

// TestLaggingClientIsResynced: a client that reads nothing does not slow
// the hub (every event is handled while its queue stays full), and once
// it reads again it is sent a resync frame, then only newer frames.
func TestLaggingClientIsResynced(t *testing.T) {
	t.Parallel()
	s, bus := hubServer(t, 4)
	stuck := s.hub.join("r1", 0)
	other := s.hub.join("r2", 0)
	const events = 10_000
	for i := range events {
		bus.Publish(&tree.NodeChanged{RunID: "r1", From: tree.StatePending, Node: tree.NodeView{ID: int64(i + 1), State: tree.StateActive}})
	}
	s.hub.sub.Flush() // the hub handled every event
	if len(stuck.ch) != 4 || !stuck.lagged {
		t.Fatalf("stuck client: %d queued, lagged %v", len(stuck.ch), stuck.lagged)
	}
	if len(other.ch) != 0 {
		t.Fatalf("a client of another run got %d frames", len(other.ch))
	}
	bus.Publish(&tree.NodeChanged{RunID: "r1", Node: tree.NodeView{ID: events + 1, State: tree.StatePending}})
	s.hub.sub.Flush()

	var got []string
	done := make(chan struct{})
	write := func(b []byte) bool {
		got = append(got, string(b))
		if strings.Contains(string(b), "event: resync") {
			close(done)
			return false // end the pump
		}
		return true
	}
	s.pump(nil, stuck, write)
	<-done
	if len(got) != 2 || !strings.Contains(got[0], "event: hello") || !strings.Contains(got[1], "event: resync") {
		t.Fatalf("frames after the lag: %q", got)
	}
	if len(stuck.ch) != 0 || stuck.takeLag() {
		t.Fatalf("the backlog was not dropped: %d", len(stuck.ch))
	}
}

func TestEncodeFrame(t *testing.T) {
	t.Parallel()
	got := string(encodeFrame(42, "node", map[string]string{"x": "<b>\n</b>"}))
	want := "id: 42\nevent: node\ndata: {\"x\":\"\\u003cb\\u003e\\n\\u003c/b\\u003e\"}\n\n"
	if got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}

// TestHookFrame: what a hook said in a node's session reaches the
// streams of the node's run, activity or not, as a hook frame; a stream
// of another run gets nothing.
func TestHookFrame(t *testing.T) {
	t.Parallel()
	s, bus := hubServer(t, 0)
	page := s.hub.join("r1", 0)
	other := s.hub.join("r2", 0)
	bus.Publish(&tree.AgentStarted{RunID: "r1", Node: tree.NodeView{ID: 3, SessionID: "r1.3"}})
	said := &agent.HookMessage{Text: "Stop says: <b>tests</b> pass", Level: agent.LevelNotice}
	said.SessionID = "r1.3"
	bus.Publish(said)
	s.hub.sub.Flush()
	if len(page.ch) != 1 || len(other.ch) != 0 {
		t.Fatalf("frames: run page %d, other run %d", len(page.ch), len(other.ch))
	}
	f := string((<-page.ch).data)
	if !strings.Contains(f, "event: hook\n") || !strings.Contains(f, `"node":3`) || !strings.Contains(f, `"text":"Stop says: \u003cb\u003etests\u003c/b\u003e pass"`) {
		t.Fatalf("frame %q", f)
	}
}

// hubServer is a web server on a fresh store and bus whose clients queue
// queueLen frames (0: the default).
func hubServer(t *testing.T, queueLen int) (*Server, *agent.Bus) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bus := agent.NewBus()
	s := New(Options{Store: st, Bus: bus, Interactions: agent.NewBroker(bus), QueueLen: queueLen})
	t.Cleanup(s.Close)
	return s, bus
}
