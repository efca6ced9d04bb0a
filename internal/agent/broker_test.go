package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

func requested(bus *agent.Bus) <-chan agent.Interaction {
	ch := make(chan agent.Interaction, 8)
	bus.Subscribe(func(e agent.Event) {
		if r, ok := e.(*agent.InteractionRequested); ok {
			ch <- r.Interaction
		}
	})
	return ch
}

func TestBroker(t *testing.T) {
	t.Parallel()

	t.Run("approve and stale id", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		br := agent.NewBroker(bus)
		reqs := requested(bus)
		got := make(chan tool.Approval, 1)
		go func() {
			a, _ := br.For("s").Approve(context.Background(), tool.ApprovalRequest{Tool: "shell"})
			got <- a
		}()
		in := <-reqs
		if in.Kind != agent.KindApproval || in.SessionID != "s" || len(br.Pending()) != 1 {
			t.Fatalf("interaction %+v", in)
		}
		if err := br.Resolve(in.ID, agent.Response{Answer: &tool.Answer{Text: "x"}}); !errors.Is(err, agent.ErrWrongResponse) {
			t.Fatalf("wrong kind: %v", err)
		}
		if err := br.Resolve("req_999", agent.Response{Approval: &tool.Approval{Allow: true}}); !errors.Is(err, agent.ErrUnknownInteraction) {
			t.Fatalf("unknown id: %v", err)
		}
		if err := br.Resolve(in.ID, agent.Response{Approval: &tool.Approval{Allow: true}}); err != nil {
			t.Fatal(err)
		}
		if a := <-got; !a.Allow {
			t.Fatalf("approval %+v", a)
		}
		if err := br.Resolve(in.ID, agent.Response{Approval: &tool.Approval{Allow: true}}); !errors.Is(err, agent.ErrUnknownInteraction) {
			t.Fatalf("stale id: %v", err)
		}
		if len(br.Pending()) != 0 {
			t.Fatal("still pending")
		}
	})

	t.Run("question times out declined", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		br := agent.NewBroker(bus)
		br.SetTimeout(agent.KindApproval, time.Millisecond)
		br.SetTimeout(agent.KindQuestion, time.Millisecond)
		ans, err := br.For("s").Ask(context.Background(), tool.Question{Question: "?"})
		if err != nil || !ans.Declined {
			t.Fatalf("answer %+v %v", ans, err)
		}
	})

	t.Run("cancel withdraws", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		br := agent.NewBroker(bus)
		reqs := requested(bus)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := br.For("s").Ask(ctx, tool.Question{Question: "?"})
			done <- err
		}()
		in := <-reqs
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		if err := br.Resolve(in.ID, agent.Response{Answer: &tool.Answer{Text: "late"}}); !errors.Is(err, agent.ErrUnknownInteraction) {
			t.Fatalf("late answer: %v", err)
		}
	})

	t.Run("a failure ends a question with error, a stop cancels it", func(t *testing.T) {
		t.Parallel()
		stop := stopCause{}
		for _, tc := range []struct {
			name   string
			cancel func(context.CancelCauseFunc)
			want   string
		}{
			{"plain cancel", func(c context.CancelCauseFunc) { c(nil) }, "cancelled"},
			{"a stop (a Canceled cause)", func(c context.CancelCauseFunc) { c(stop) }, "cancelled"},
			{"a failure", func(c context.CancelCauseFunc) { c(errors.New("node timed out")) }, "error"},
		} {
			bus := agent.NewBus()
			br := agent.NewBroker(bus)
			reqs := requested(bus)
			resolved := make(chan string, 1)
			bus.Subscribe(func(e agent.Event) {
				if r, ok := e.(*agent.InteractionResolved); ok {
					resolved <- r.Resolution
				}
			})
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := br.For("s").Ask(ctx, tool.Question{Question: "?"})
				done <- err
			}()
			<-reqs
			tc.cancel(cancel)
			<-done
			select {
			case got := <-resolved:
				if got != tc.want {
					t.Fatalf("%s: resolution %q, want %q", tc.name, got, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no InteractionResolved", tc.name)
			}
		}
	})
}

// stopCause is a cause that is a context.Canceled, as the tree's stops are.
type stopCause struct{}

func (stopCause) Error() string        { return "node stopped" }
func (stopCause) Is(target error) bool { return target == context.Canceled }
