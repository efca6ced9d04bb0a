package envelope_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// echoServer answers every request with "did: <the last user text>".
func echoServer(t *testing.T) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "did: " + r.LastUserText()}
	})
	t.Cleanup(srv.Close)
	return srv
}

// TestCancelRacesQueuedSend sends a message and a cancel on its heels
// 1,000 times, so the cancel lands anywhere from before the turn starts
// to after it ends: every message is either answered or its idle reports
// cancelled, no error reaches the wire and last_error stays empty. (A
// message stored before the cancel stopped its turn is part of the
// conversation and reaches the model with the next one.)
func TestCancelRacesQueuedSend(t *testing.T) {
	t.Parallel()
	b, _ := setup(t, echoServer(t))
	outcomes := map[string]int{}
	var lastIdle uint64
	for i := range 1000 {
		msg := fmt.Sprintf("message %d", i)
		// 0 to 15 status commands between the two spread where the
		// cancel lands.
		lines := []string{cmd(map[string]string{"type": "send", "content": msg})}
		for range i % 16 {
			lines = append(lines, status)
		}
		b.Send(append(lines, `{"type":"cancel"}`)...)
		answered := false
		for {
			o := b.Next(func(o out) bool {
				return o.Type == "assistant_message" || o.Type == "idle" || o.Type == "error"
			})
			if o.Type == "error" {
				t.Fatalf("try %d: %s", i, o.raw)
			}
			if o.Type == "assistant_message" {
				// A cancelled turn's message that was stored stays in the
				// conversation: the next request carries it too.
				if !strings.HasPrefix(o.P.Text, "did: ") || !strings.HasSuffix(o.P.Text, msg) {
					t.Fatalf("try %d: answer to another message: %.300s", i, o.raw)
				}
				answered = true
				continue
			}
			if o.P.LastOutcome != "completed" && o.P.LastOutcome != "cancelled" || o.P.LastOutcome == "completed" && !answered {
				t.Fatalf("try %d: message %q neither answered nor cancelled: %s", i, msg, o.raw)
			}
			outcomes[o.P.LastOutcome]++
			lastIdle = o.Seq
			break
		}
	}
	b.Send(status)
	if st := b.Next(func(o out) bool { return o.Type == "status_response" && o.Seq > lastIdle }); st.P.Busy || strings.Contains(string(st.Payload), "context canceled") {
		t.Fatalf("after the races %s", st.raw)
	}
	var last struct {
		LastError string `json:"last_error"`
	}
	b.Close()
	for _, o := range b.All {
		if o.Type == "status_response" {
			_ = json.Unmarshal(o.Payload, &last)
			if last.LastError != "" {
				t.Fatalf("last_error %q", last.LastError)
			}
		}
	}
	t.Logf("outcomes %v", outcomes)
	b.checkSeq()
}

// TestCancelLeavesQueuedSends cancels a turn held at the model with
// another message queued behind it: the queued one runs and its idle
// reports completed, not the earlier cancel.
func TestCancelLeavesQueuedSends(t *testing.T) {
	t.Parallel()
	srv, arrived, release := heldServer(t, llmtest.Turn{Text: "never seen"})
	b, _ := setup(t, srv)
	b.Send(`{"type":"send","content":"first"}`)
	waitClosed(t, arrived, "first request")
	b.Send(`{"type":"send","content":"second"}`, `{"type":"cancel"}`)
	close(release)
	if m := b.Next(typ("assistant_message")); !strings.HasSuffix(m.P.Text, "second") {
		t.Fatalf("assistant_message %s", m.raw)
	}
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" || idle.P.Suppress {
		t.Fatalf("idle after the queued send %s", idle.raw)
	}
	b.Close()
	for _, o := range b.All {
		if o.Type == "error" {
			t.Fatalf("error on the wire: %s", o.raw)
		}
	}
}
