package envelope_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

const continuation = "Continue working toward the goal. When it is fully done, call done with a final report."

func doneTurn(expect string) llmtest.Turn {
	return llmtest.Turn{Expect: expect, ToolCalls: []llmtest.ToolCall{{ID: "toolu_done1", Name: "done",
		Input: map[string]any{"report": "all built", "reason": "goal met"}}}}
}

// untilIdle collects the output up to and including the next idle.
func (b *bundle) untilIdle() []out {
	b.t.Helper()
	start := len(b.All)
	b.Next(typ("idle"))
	return slices.Clone(b.All[start:])
}

func types(outs []out) []string {
	var ts []string
	for _, o := range outs {
		ts = append(ts, o.Type)
	}
	return ts
}

func loopOn(b *bundle, on string) {
	b.t.Helper()
	b.Send(sendText("/loop " + on))
	if i := b.Next(typ("info")); i.P.Message != "loop "+on || i.Seq == 0 {
		b.t.Fatalf("/loop %s: %s", on, i.raw)
	}
}

func TestLoopContinuesUntilDone(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "started"}, llmtest.Turn{Text: "halfway", Expect: continuation},
		doneTurn(continuation), llmtest.Turn{Text: "you're welcome", Expect: "thanks"})
	defer srv.Close()
	b, _ := setup(t, srv)
	loopOn(b, "on")
	b.Send(sendText("build it"))
	turn := b.untilIdle()
	ts := types(turn)
	if n := strings.Count(strings.Join(ts, " "), "done_completion"); n != 1 {
		t.Fatalf("%d done_completion in %v", n, ts)
	}
	dc := turn[slices.Index(ts, "done_completion")]
	var p map[string]any
	if err := json.Unmarshal(dc.Payload, &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"call_id": "toolu_done1", "report": "all built", "reason": "goal met", "status": "completed",
		"agent_id": "", "mode": "normal"}
	if !maps.Equal(p, want) || dc.Seq == 0 {
		t.Fatalf("done_completion %s", dc.raw)
	}
	if idle := turn[len(turn)-1]; idle.P.LastOutcome != "completed" {
		t.Fatalf("idle %s", idle.raw)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (turn, continuation, done)", len(reqs))
	}
	if !slices.ContainsFunc(reqs[0].Tools, func(s llm.ToolSpec) bool { return s.Name == "done" }) {
		t.Fatalf("done is not offered: %v", reqs[0].Tools)
	}
	for i, r := range reqs[1:] {
		if got := r.LastUserText(); got != continuation {
			t.Fatalf("request %d: last user text %q", i+1, got)
		}
	}
	// done ended the loop: the next turn is not continued.
	b.Send(sendText("thanks"))
	b.untilIdle()
	if n := len(srv.Requests()); n != 4 {
		t.Fatalf("%d model requests after the loop, want 4", n)
	}
	b.Close()
	b.checkSeq()
}

func TestLoopOffStopsContinuations(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "step one"}, askTurn(), llmtest.Turn{Text: "blue it is", Expect: "blue"})
	defer srv.Close()
	b, _ := setup(t, srv)
	loopOn(b, "on")
	b.Send(sendText("paint it"))
	// The continuation asks a question; the loop goes off while it waits.
	q := b.Next(typ("question_request"))
	loopOn(b, "off")
	b.Send(`{"type":"question","request_id":"` + q.P.RequestID + `","answers":["blue"],"reason":"answered"}`)
	turn := b.untilIdle()
	if slices.Contains(types(b.All), "done_completion") {
		t.Fatalf("done_completion without done: %v", types(turn))
	}
	b.Send(`{"type":"status"}`)
	if st := b.Next(typ("status_response")); st.P.Busy {
		t.Fatalf("busy after the loop went off: %s", st.raw)
	}
	b.Close()
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[1].LastUserText(), continuation) {
		t.Fatalf("%d model requests, want 3 with one continuation", len(reqs))
	}
	if srv.Remaining() != 0 {
		t.Fatalf("%d scripted turns left", srv.Remaining())
	}
}

func TestDoneOutsideLoop(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(doneTurn(""), llmtest.Turn{Text: "understood", Expect: "done is only available while /loop is on"})
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(sendText("finish"))
	turn := b.untilIdle()
	if slices.Contains(types(turn), "done_completion") {
		t.Fatalf("done_completion outside a loop: %v", types(turn))
	}
	b.Close()
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (done is not the end of the turn outside a loop)", len(reqs))
	}
	if !strings.Contains(string(reqs[1].Body), `"is_error":true`) {
		t.Fatalf("done's refusal is not an error result: %s", reqs[1].Body)
	}
}

func TestLoopBound(t *testing.T) {
	t.Parallel()
	const bound = 25
	turns := []llmtest.Turn{{Text: "turn 0"}}
	for i := 1; i <= bound; i++ {
		turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("turn %d", i), Expect: continuation})
	}
	srv := llmtest.NewServer(turns...)
	defer srv.Close()
	b, _ := setup(t, srv)
	loopOn(b, "on")
	b.Send(sendText("never finish"))
	turn := b.untilIdle()
	ts := types(turn)
	i := slices.Index(ts, "error")
	if i < 0 || turn[i].P.Message != fmt.Sprintf("loop stopped after %d turns without done", bound) || turn[i].Seq == 0 {
		t.Fatalf("no bound error in %v", ts)
	}
	if n := strings.Count(strings.Join(ts, " "), "idle"); n != 1 {
		t.Fatalf("%d idles in one loop: %v", n, ts)
	}
	// The loop failed: its idle says error, as does the status.
	if idle := turn[len(turn)-1]; idle.Type != "idle" || idle.P.LastOutcome != "error" {
		t.Fatalf("the bound's idle: %s", idle.raw)
	}
	if n := len(srv.Requests()); n != bound+1 {
		t.Fatalf("%d model requests, want %d", n, bound+1)
	}
	b.Send(`{"type":"status"}`)
	if st := b.Next(typ("status_response")); st.P.Busy || st.P.LastOutcome != "error" {
		t.Fatalf("status after the bound: %s", st.raw)
	}
	b.Close()
	b.checkSeq()
}

func TestLoopUsage(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setup(t, srv)
	for _, text := range []string{"/loop", "/loop maybe", "/loop on now"} {
		b.Send(sendText(text))
		if e := b.Next(typ("error")); e.P.Code != "invalid_command" || !strings.Contains(e.P.Message, "usage: /loop on|off") {
			t.Fatalf("%s: %s", text, e.raw)
		}
	}
	b.Close()
}
