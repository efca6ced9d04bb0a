package envelope_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
)

// writeTurn calls write_file, which asks for a confirm.
var writeTurn = llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "x.txt", "content": "x"}}}}

// heldServer answers the first model request with first, but only once
// release is closed; every later request with "did: <the last user
// text>". arrived is closed when the first request is in.
func heldServer(t *testing.T, first llmtest.Turn) (srv *llmtest.Server, arrived, release chan struct{}) {
	t.Helper()
	arrived, release = make(chan struct{}), make(chan struct{})
	held := true
	srv = llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		if held {
			held = false
			close(arrived)
			<-release
			return first
		}
		return llmtest.Turn{Text: "did: " + r.LastUserText()}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		srv.Close()
	})
	return srv, arrived, release
}

// waitClosed fails the test when ch is not closed within a generous bound
// (a hang); it times nothing.
func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s within 30s", what)
	}
}

// TestReaderNeverBlocks queues 1,000 sends behind a turn held at the model
// and then waiting for a confirm: status is answered and the confirm
// accepted whatever is queued, then every send runs, in order. With a
// small headless.queue_limit the sends past it are answered queue_full
// and the others all run.
func TestReaderNeverBlocks(t *testing.T) {
	t.Parallel()
	const n = 1000
	for _, tc := range []struct {
		name  string
		limit int // 0 = none
	}{{"unbounded", 0}, {"limit", 5}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, arrived, release := heldServer(t, writeTurn)
			files := map[string]string{}
			if tc.limit > 0 {
				files[".arbor/config.yaml"] = fmt.Sprintf("headless:\n  queue_limit: %d\n", tc.limit)
			}
			b, _ := setupFiles(t, srv, files)
			b.Send(cmd(map[string]any{"type": "send", "content": "start"}))
			waitClosed(t, arrived, "model request")

			// One write of 1,000 sends and a status, from a goroutine: a
			// server that stops reading must fail the test, not hang it.
			var lines strings.Builder
			for i := range n {
				lines.WriteString(cmd(map[string]any{"type": "send", "content": fmt.Sprintf("m %d", i)}) + "\n")
			}
			lines.WriteString(`{"type":"status"}` + "\n")
			go func() { _, _ = io.WriteString(b.Input(), lines.String()) }()

			full := 0
			st := b.Next(func(o out) bool {
				if o.Type == "error" {
					if o.P.Code != "queue_full" {
						t.Fatalf("error while queueing: %s", o.raw)
					}
					full++
				}
				return o.Type == "status_response"
			})
			if !st.P.Busy {
				t.Fatalf("status while work is queued: %s", st.raw)
			}
			accepted := n
			if tc.limit > 0 {
				accepted = tc.limit
			}
			if full != n-accepted {
				t.Fatalf("%d sends answered queue_full, want %d", full, n-accepted)
			}

			// The held turn now asks for a confirm, behind everything queued.
			close(release)
			c := b.Next(typ("confirm_request"))
			b.Send(`{"type":"status"}`)
			if st := b.Next(typ("status_response")); string(st.P.PendingConfirm) == "null" {
				t.Fatalf("status without the pending confirm: %s", st.raw)
			}
			b.Send(cmd(map[string]any{"type": "confirm", "request_id": c.P.RequestID, "action": "allow"}))

			for i := -1; i < accepted; i++ {
				want := "did: m " + fmt.Sprint(i)
				if i < 0 {
					want = "did: " // the tool result of the held turn
				}
				m := b.Next(func(o out) bool { return o.Type == "assistant_message" && o.P.Text != "" || o.Type == "error" })
				if m.Type == "error" || !strings.HasPrefix(m.P.Text, want) {
					t.Fatalf("reply %d: %s, want %q", i, m.raw, want)
				}
			}
			if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
				t.Fatalf("idle %s", idle.raw)
			}
			b.Close()
			b.checkSeq()
			for _, o := range b.All {
				if o.Type == "idle" && o.Seq < st.Seq {
					t.Fatalf("idle before the queued work ran: %s", o.raw)
				}
			}
			if got := len(srv.Requests()); got != accepted+2 {
				t.Fatalf("%d model requests, want %d", got, accepted+2)
			}
		})
	}
}

// TestModelSwitchOnTheRunner: a pool switch sent while a turn runs is
// answered after that turn, by the runner that owns the session's agent
// (under -race: never while the agent runs), and the next turn uses the
// new model; status is answered meanwhile.
func TestModelSwitchAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	srv, arrived, release := heldServer(t, llmtest.Turn{Text: "first"})
	b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": poolsConfig})
	b.Send(`{"type":"send","content":"start"}`)
	waitClosed(t, arrived, "model request")
	// The turn's model request is held: the switch is answered anyway,
	// and the status taken after it still shows the turn running.
	b.Send(`{"type":"models","action":"set_current_model_pool","pool":"thinking"}`)
	if r := b.Next(typ("models_response")); !r.P.OK || !strings.Contains(r.P.Status, "Model: anthropic/claude-think\n") {
		t.Fatalf("models_response %s", r.raw)
	}
	b.Send(`{"type":"send","content":"after"}`, `{"type":"status"}`)
	if st := b.Next(typ("status_response")); !st.P.Busy {
		t.Fatalf("status while the turn is held: %s", st.raw)
	}
	close(release)
	if first := b.Next(typ("assistant_message")); first.P.Text != "first" {
		t.Fatalf("the held turn: %s", first.raw)
	}
	if m := b.Next(typ("assistant_message")); m.P.Text != "did: after" {
		t.Fatalf("after the switch: %s", m.raw)
	}
	if idle := b.Next(typ("idle")); idle.P.Suppress || idle.P.LastOutcome != "completed" {
		t.Fatalf("idle after the turns: %s", idle.raw)
	}
	b.Close()
	b.checkSeq()
	// The request under way kept its model; the next one took the pool's.
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Model != "claude-test" || reqs[1].Model != "claude-think" {
		t.Fatalf("model requests %+v", reqs)
	}
}

// TestClientNotReadingStallsNoAgent: a client that stops reading stdout
// stalls only its own output. With nothing read after ready, a turn whose
// tool pushes (todo_write) runs to its end; the output is all there when
// the client reads again.
func TestClientNotReadingStallsNoAgent(t *testing.T) {
	t.Parallel()
	todo := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "todo_write", Input: map[string]any{
		"todos": []any{map[string]any{"id": "1", "content": "step", "status": "pending", "active_form": "stepping"}}}}}}
	srv := llmtest.NewServer(todo, llmtest.Turn{Text: strings.Repeat("many words ", 2000)}, llmtest.Turn{Text: "second"})
	defer srv.Close()
	a, _, _ := openApp(t, srv, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := envelope.Serve(t.Context(), a, inR, outW, io.Discard, envelope.Options{})
		outW.Close()
		done <- err
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 4<<20)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"ready"`) {
		t.Fatalf("first line %q", lines.Text())
	}

	// From here on nobody reads stdout until the model has been asked three
	// times: two steps of the first turn and the second turn.
	go func() {
		_, _ = io.WriteString(inW, `{"type":"send","content":"plan"}`+"\n"+`{"type":"send","content":"again"}`+"\n")
	}()
	asked := make(chan struct{})
	go func() { srv.WaitRequests(3); close(asked) }()
	waitClosed(t, asked, "third model request while stdout is not read")

	var idles int
	var last string
	go func() { _ = inW.Close() }()
	for lines.Scan() {
		last = lines.Text()
		if strings.Contains(last, `"type":"idle"`) {
			idles++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if idles != 1 || !strings.Contains(last, `"type":"idle"`) {
		t.Fatalf("%d idles, last line %s", idles, last)
	}
}

// TestNavigationWaitingShownInStatus: /new sent while a turn runs waits
// for it, and status says so (phase waiting_turn, the command in
// phase_detail) until it runs.
func TestNavigationWaitingShownInStatus(t *testing.T) {
	t.Parallel()
	srv, arrived, release := heldServer(t, llmtest.Turn{Text: "first"})
	b, ready := setup(t, srv)
	b.Send(`{"type":"send","content":"start"}`)
	waitClosed(t, arrived, "model request")
	b.Send(`{"type":"send","content":"/new"}`, `{"type":"status"}`)
	st := b.Next(typ("status_response"))
	var p struct {
		Phase       string `json:"phase"`
		PhaseDetail string `json:"phase_detail"`
	}
	if err := json.Unmarshal(st.Payload, &p); err != nil || !st.P.Busy || p.Phase != "waiting_turn" || p.PhaseDetail != "/new" {
		t.Fatalf("status while /new waits: %s (%v)", st.raw, err)
	}
	close(release)
	if sw := b.Next(typ("session_switched")); sw.P.SessionID == ready.P.SessionID {
		t.Fatalf("session_switched %s", sw.raw)
	}
	b.Next(typ("idle"))
	b.Send(`{"type":"status"}`)
	st = b.Next(typ("status_response"))
	if err := json.Unmarshal(st.Payload, &p); err != nil || st.P.Busy || p.Phase != "" || p.PhaseDetail != "" {
		t.Fatalf("status after /new ran: %s (%v)", st.raw, err)
	}
	b.Close()
}
