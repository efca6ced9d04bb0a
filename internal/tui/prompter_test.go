package tui

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestTerminalManyPendingApprovals: 100 approvals wait while the person
// is still reading the first prompt; the agents and the bus go on (a
// publish returns), and every approval is answered in turn once the
// answers are typed. The terminal once pushed into a 16-slot channel from
// inside the bus subscriber, which stalled every agent at the 17th.
func TestTerminalManyPendingApprovals(t *testing.T) {
	t.Parallel()
	const n = 100
	bus := agent.NewBus()
	broker := agent.NewBroker(bus)
	inR, inW := io.Pipe()
	term := &Prompter{In: inR, Out: io.Discard, Interactive: true, RunID: "r1"}
	ctx := t.Context()
	stop := term.Serve(ctx, bus, broker)
	defer stop()

	var wg sync.WaitGroup
	allowed := make(chan bool, n)
	for i := range n {
		wg.Go(func() {
			ap, err := broker.For(fmt.Sprintf("s%d", i)).Approve(ctx, tool.ApprovalRequest{Tool: "shell", Input: []byte(`{"command":"true"}`)})
			if err != nil {
				t.Error(err)
			}
			allowed <- ap.Allow
		})
	}
	// Nobody has typed anything: every approval is pending at once.
	deadline := time.Now().Add(30 * time.Second)
	for len(broker.Pending()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d approvals pending: requesting an approval blocked", len(broker.Pending()), n)
		}
		time.Sleep(time.Millisecond)
	}
	published := make(chan struct{})
	go func() {
		bus.Publish(&agent.Idle{})
		close(published)
	}()
	select {
	case <-published:
	case <-time.After(30 * time.Second):
		t.Fatal("a publish blocked behind the pending approvals")
	}

	go func() { _, _ = io.WriteString(inW, strings.Repeat("y\n", n)) }()
	wg.Wait()
	close(allowed)
	got := 0
	for ok := range allowed {
		if !ok {
			t.Fatal("an approval was denied; every one was answered y")
		}
		got++
	}
	if got != n {
		t.Fatalf("%d approvals answered, want %d", got, n)
	}
	inW.Close()
}
