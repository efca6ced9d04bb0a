package agent_test

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestToolProcessGroupInIntent checks that the process group a tool's
// command runs in is recorded in the call's intent.
func TestToolProcessGroupInIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, calls(call("c1", "run", `{"text":"echo hi"}`)), text("done"))
	b.cfg.Tools.Add(tool.New("run", "Run a command.", tool.KindExecute, func(ctx context.Context, _ tool.Call, a echoArgs) tool.Result {
		r := tool.RunCommand(ctx, nil, t.TempDir(), a.Text, time.Minute, 1000, time.Second)
		return tool.Result{Content: r.Output, IsError: r.ExitCode != 0}
	}))
	if res := b.agent.Send(b.ctx, llm.UserText("go")); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("send: %+v", res)
	}
	intents, err := b.store.Intents(b.ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(intents) != 1 || intents[0].PGID < 2 || intents[0].Status != store.IntentFinished || intents[0].Result != "hi\n" {
		t.Fatalf("intents %+v, want one finished with a process group", intents)
	}
}

// TestResumeKillsRecordedGroup stores what a process killed while a tool's
// command ran leaves behind, with the command still running, and checks
// that resuming kills it before reporting the call as interrupted.
func TestResumeKillsRecordedGroup(t *testing.T) {
	t.Parallel()
	b := setup(t, text("resumed"))
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	asst := calls(call("running", "echo", `{"text":"b"}`)).resp.Message
	if _, err := b.store.AppendMessages(b.ctx, "s1", llm.UserText("go"), asst); err != nil {
		t.Fatal(err)
	}
	if err := b.store.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "running", Tool: "echo", StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := b.store.SetIntentPGID(b.ctx, "s1", "running", pgid); err != nil {
		t.Fatal(err)
	}
	if err := b.agent.Load(b.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("the command ended before the resume: %v", err)
	default:
	}
	if res := b.agent.Continue(b.ctx); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("continue: %+v", res)
	}
	select {
	case err := <-exited:
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("the command ended with %v, want killed", err)
		}
	case <-time.After(10 * time.Second): // bounds a failing test only
		t.Fatal("the recorded process group is still running after the resume")
	}
	r := results(b.messages(t)[2])
	if !r[0].IsError || !strings.HasPrefix(r[0].Content, "interrupted") || !strings.Contains(r[0].Content, "processes it left running were killed") {
		t.Fatalf("result %+v, want interrupted and its processes killed", r[0])
	}
}
