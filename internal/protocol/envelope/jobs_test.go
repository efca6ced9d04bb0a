package envelope_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func backgroundTurn(command string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell",
		Input: map[string]any{"command": command, "run_in_background": true}}}}
}

// allowNext answers the next confirm_request with allow.
func (b *bundle) allowNext(tool string) {
	b.t.Helper()
	req := b.Next(typ("confirm_request"))
	if req.P.ToolName != tool {
		b.t.Fatalf("confirm_request %s", req.raw)
	}
	b.Send(cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow"}))
}

// mkfifo makes a named pipe in the workspace and returns its path.
func (b *bundle) mkfifo(name string) string {
	b.t.Helper()
	p := filepath.Join(b.ws, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		b.t.Fatal(err)
	}
	return p
}

func TestBackgroundJobs(t *testing.T) {
	t.Parallel()

	t.Run("ResultIsDeliveredAsATurn", func(t *testing.T) {
		t.Parallel()
		command := "read l < gate; echo job says $l; exit 3"
		srv := llmtest.NewServer(backgroundTurn(command), llmtest.Turn{Text: "started it"},
			llmtest.Turn{Text: "the job said hi", Expect: "job says hi"})
		defer srv.Close()
		b, ready := setup(t, srv)
		gate := b.mkfifo("gate")
		b.Send(`{"type":"send","content":"start the job"}`)
		b.allowNext("shell")
		idle := b.Next(typ("idle"))
		if idle.P.RunningJobs != 1 || idle.P.LastOutcome != "completed" {
			t.Fatalf("idle while the job runs %s", idle.raw)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); st.P.RunningJobs != 1 || st.P.Busy {
			t.Fatalf("status while the job runs %s", st.raw)
		}
		// The job blocks reading the fifo until this write.
		if err := os.WriteFile(gate, []byte("hi\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		res := b.Next(typ("background_result"))
		want := "job_1 (`" + command + "`) ended with exit code 3:\njob says hi\n"
		if res.P.Content != want || res.P.SessionID != ready.P.SessionID || res.P.TargetAgentID != "" || res.P.MessageIndex != 0 {
			t.Fatalf("background_result %s", res.raw)
		}
		msg := b.Next(typ("assistant_message"))
		if msg.P.Text != "the job said hi" {
			t.Fatalf("delivery turn answered %s", msg.raw)
		}
		idle = b.Next(typ("idle"))
		if idle.P.RunningJobs != 0 || idle.P.LastOutcome != "completed" || idle.P.Suppress {
			t.Fatalf("idle after the delivery %s", idle.raw)
		}
		reqs := srv.Requests()
		if len(reqs) != 3 || reqs[2].LastUserText() != want {
			t.Fatalf("%d requests; the last user text %q", len(reqs), reqs[len(reqs)-1].LastUserText())
		}
		b.Close()
		b.checkSeq()
		for _, o := range b.All {
			if o.Type == "idle" && o.Seq > res.Seq && o.Seq != idle.Seq {
				t.Fatalf("idle other than the delivery turn's after the result %s", o.raw)
			}
		}
	})

	t.Run("KilledJobStopsCountingWithoutResult", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(backgroundTurn("sleep 100"), llmtest.Turn{Text: "started"},
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "job_kill", Input: map[string]any{"id": "job_1"}}}},
			llmtest.Turn{Text: "killed"})
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"start"}`)
		b.allowNext("shell")
		if idle := b.Next(typ("idle")); idle.P.RunningJobs != 1 {
			t.Fatalf("idle while the job runs %s", idle.raw)
		}
		b.Send(`{"type":"send","content":"kill it"}`)
		b.allowNext("job_kill")
		if idle := b.Next(typ("idle")); idle.P.RunningJobs != 0 {
			t.Fatalf("idle after job_kill %s", idle.raw)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); st.P.RunningJobs != 0 {
			t.Fatalf("status after job_kill %s", st.raw)
		}
		b.Close()
		b.checkSeq()
		for _, o := range b.All {
			if o.Type == "background_result" {
				t.Fatalf("result of a killed job %s", o.raw)
			}
		}
		if n := len(srv.Requests()); n != 4 {
			t.Fatalf("%d model requests, want 4", n)
		}
	})

	t.Run("NewSessionDropsOldJobs", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(backgroundTurn("sleep 100"), llmtest.Turn{Text: "started"})
		defer srv.Close()
		b, ready := setup(t, srv)
		b.Send(`{"type":"send","content":"start"}`)
		b.allowNext("shell")
		b.Next(typ("idle"))
		b.Send(`{"type":"send","content":"/new"}`)
		if sw := b.Next(typ("session_switched")); sw.P.SessionID == ready.P.SessionID {
			t.Fatalf("session_switched %s", sw.raw)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); st.P.RunningJobs != 0 {
			t.Fatalf("status after /new %s", st.raw)
		}
		b.Close()
		for _, o := range b.All {
			if o.Type == "background_result" {
				t.Fatalf("result of a job of the old session %s", o.raw)
			}
		}
	})
}
