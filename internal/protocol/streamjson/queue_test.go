package streamjson_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// allow answers a can_use_tool request.
func allow(rid string) string {
	return `{"type":"control_response","response":{"subtype":"success","request_id":"` + rid + `","response":{"behavior":"allow"}}}`
}

// sendAll writes lines in one write from another goroutine, so a server
// that stops reading cannot hang the test: the reads that follow fail it
// after their bound instead (and the pipe's close ends the write).
func (b *bundle) sendAll(lines ...string) {
	blob := strings.Join(lines, "\n") + "\n"
	go func() { _, _ = io.WriteString(b.Input(), blob) }()
}

// TestReaderNeverBlocks: user messages queued behind a turn that waits for
// a can_use_tool answer never stop the reader, so the answer gets in.
func TestReaderNeverBlocks(t *testing.T) {
	t.Parallel()

	t.Run("1000 queued messages, then the answer; all run in order", func(t *testing.T) {
		t.Parallel()
		const n = 1000
		turns := []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
			{Text: "wrote a"},
		}
		var msgs []string
		for i := range n {
			turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("reply %d", i), Expect: fmt.Sprintf("message %d", i)})
			msgs = append(msgs, user(fmt.Sprintf("message %d", i)))
		}
		srv := llmtest.NewServer(turns...)
		defer srv.Close()
		b := setup(t, srv, setupOpts{})
		b.Send(user("write a"))
		req := b.Next(typ("control_request", "can_use_tool"))

		b.sendAll(append(msgs, allow(req.RequestID))...)
		if res := b.Next(typ("result", "")); res.Result != "wrote a" || res.IsError {
			t.Fatalf("the approved turn: %s", res.raw)
		}
		for i := range n {
			if res := b.Next(typ("result", "")); res.Result != fmt.Sprintf("reply %d", i) || res.IsError {
				t.Fatalf("queued message %d: %s", i, res.raw)
			}
		}
		b.Close()
	})

	t.Run("past headless.queue_limit messages are refused with queue_full", func(t *testing.T) {
		t.Parallel()
		const limit, n = 3, 10
		turns := []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
			{Text: "wrote a"},
		}
		var msgs []string
		for i := range n {
			if i < limit {
				turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("reply %d", i), Expect: fmt.Sprintf("message %d", i)})
			}
			msgs = append(msgs, user(fmt.Sprintf("message %d", i)))
		}
		srv := llmtest.NewServer(turns...)
		defer srv.Close()
		b := setup(t, srv, setupOpts{project: fmt.Sprintf("headless:\n  queue_limit: %d\n", limit)})
		b.Send(user("write a"))
		req := b.Next(typ("control_request", "can_use_tool"))

		b.sendAll(append(msgs, allow(req.RequestID))...)
		var refused, replies []string
		for len(replies) < limit+1 {
			res := b.Next(typ("result", ""))
			switch {
			case res.IsError:
				if len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], "queue_full: ") || res.SessionID == "" {
					t.Fatalf("a refused message: %s", res.raw)
				}
				refused = append(refused, res.Errors[0])
			default:
				replies = append(replies, res.Result)
			}
		}
		b.Close()
		if len(refused) != n-limit {
			t.Fatalf("%d messages refused, want %d", len(refused), n-limit)
		}
		want := []string{"wrote a", "reply 0", "reply 1", "reply 2"}
		if strings.Join(replies, "|") != strings.Join(want, "|") {
			t.Fatalf("results %q, want %q", replies, want)
		}
		mustContain(t, refused[0], "headless.queue_limit")
	})

	t.Run("a control request past the limit is answered with an error", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
			llmtest.Turn{Text: "wrote a"},
			llmtest.Turn{Text: "reply 0", Expect: "message 0"},
		)
		defer srv.Close()
		b := setup(t, srv, setupOpts{project: "headless:\n  queue_limit: 1\n"})
		b.Send(user("write a"))
		req := b.Next(typ("control_request", "can_use_tool"))
		b.Send(user("message 0"),
			`{"type":"control_request","request_id":"m-1","request":{"subtype":"switch_model","model":"openai/gpt-test"}}`,
			`{"type":"control_request","request_id":"c-1","request":{"subtype":"config_override","approval_mode":"trust"}}`)
		r := b.Next(typ("control_response", ""))
		if r.Response.RequestID != "m-1" || r.Response.Subtype != "error" || !strings.HasPrefix(r.Response.Error, "queue_full: ") {
			t.Fatalf("switch_model past the limit: %s", r.raw)
		}
		// What needs no runner is still answered at once.
		if r := b.Next(typ("control_response", "")); r.Response.RequestID != "c-1" || r.Response.Subtype != "success" {
			t.Fatalf("config_override: %s", r.raw)
		}
		b.Send(allow(req.RequestID))
		if res := b.Next(typ("result", "")); res.Result != "wrote a" {
			t.Fatalf("the approved turn: %s", res.raw)
		}
		if res := b.Next(typ("result", "")); res.Result != "reply 0" {
			t.Fatalf("the queued turn: %s", res.raw)
		}
		b.Close()
		for _, r := range srv.Requests() {
			if r.Format != "anthropic" {
				t.Fatalf("a refused switch must not apply: a request went to %s %s", r.Format, r.Model)
			}
		}
	})
}

// TestSwitchModelDuringTurn: a model switch sent while a turn runs is the
// session runner's work, queued behind the turn: the turn finishes on its
// model, then the switch is answered, and the next turn uses the new model.
// Under -race nothing but the runner touches the agent.
func TestSwitchModelDuringTurn(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "writing", ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
		llmtest.Turn{Text: "wrote a"},
		llmtest.Turn{Text: "from gpt", Expect: "hi"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{PartialMessages: true}})
	b.Send(user("write a"))
	b.Next(typ("stream_event", ""))
	b.Send(`{"type":"control_request","request_id":"m-1","request":{"subtype":"switch_model","model":"openai/gpt-test"}}`)
	req := b.Next(typ("control_request", "can_use_tool"))
	b.Send(allow(req.RequestID), user("hi"))

	res := b.Next(func(o out) bool { return o.Type == "result" || o.Type == "control_response" })
	if res.Type != "result" || res.Result != "wrote a" {
		t.Fatalf("the running turn must end before the switch is answered: %s", res.raw)
	}
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "success" || r.Response.RequestID != "m-1" {
		t.Fatalf("switch_model %s", r.raw)
	}
	if sw := b.Next(typ("system", "model_switched")); sw.Model != "openai/gpt-test" {
		t.Fatalf("model_switched %s", sw.raw)
	}
	if res := b.Next(typ("result", "")); res.Result != "from gpt" {
		t.Fatalf("the next turn %s", res.raw)
	}
	b.Close()
	var got []string
	for _, r := range srv.Requests() {
		got = append(got, r.Format+" "+r.Model)
	}
	if want := "anthropic claude-test|anthropic claude-test|openai gpt-test"; strings.Join(got, "|") != want {
		t.Fatalf("model requests %q, want %q", got, want)
	}
}

// TestEndOfInputFinishesQueuedTurns: the input ending behind queued user
// messages does not cancel them; Serve returns after their results.
func TestEndOfInputFinishesQueuedTurns(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"}, llmtest.Turn{Text: "three"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("1"), user("2"), user("3"))
	b.Close()
	var got []string
	for _, o := range b.All {
		if o.Type == "result" {
			if o.IsError {
				t.Fatalf("a queued turn failed: %s", o.raw)
			}
			got = append(got, o.Result)
		}
	}
	if strings.Join(got, " ") != "one two three" {
		t.Fatalf("results %q", got)
	}
}

// TestEndOfInputRefusesPendingRequests: a turn waiting for a can_use_tool
// answer when the input ends gets a denial (the client can no longer
// answer), finishes, and Serve returns; so does a question asked later.
func TestEndOfInputRefusesPendingRequests(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ask_user", Input: map[string]any{"question": "Which?"}}}, Expect: "closed its input"},
		llmtest.Turn{Text: "gave up"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("write a"))
	b.Next(typ("control_request", "can_use_tool"))
	b.Close()
	var res []out
	for _, o := range b.All {
		if o.Type == "result" {
			res = append(res, o)
		}
	}
	if len(res) != 1 || res[0].Result != "gave up" {
		t.Fatalf("results %+v", res)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("a write nobody approved happened")
	}
}

// TestSinglePromptReadsAnswers: in single-prompt mode the input is still
// read, so a can_use_tool the turn asks is answered by the client; Serve
// returns after the result although the input stays open.
func TestSinglePromptReadsAnswers(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
		llmtest.Turn{Text: "written"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{Prompt: "write a"}})
	req := b.Next(typ("control_request", "can_use_tool"))
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"behavior":"allow"}}}`)
	if r := b.Next(typ("result", "")); r.IsError || r.Result != "written" {
		t.Fatalf("result %s", r.raw)
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(b.ws, "a.txt")); err != nil || string(got) != "a" {
		t.Fatalf("a.txt = %q, %v", got, err)
	}
}

// TestMaxBudget: once the session's cost reaches MaxBudgetUSD no model call
// is made; the turn ends with error_max_budget_usd.
func TestMaxBudget(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "costly"}, llmtest.Turn{Text: "never"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{MaxBudgetUSD: 0.000001},
		project: "providers:\n  anthropic:\n    models:\n      claude-test:\n        price: {input: 1000, output: 1000}\n"})
	b.Send(user("one"))
	if r := b.Next(typ("result", "")); r.IsError {
		t.Fatalf("first turn %s", r.raw)
	}
	b.Send(user("two"))
	r := b.Next(typ("result", ""))
	if r.Subtype != "error_max_budget_usd" || !r.IsError {
		t.Fatalf("second turn %s; want error_max_budget_usd", r.raw)
	}
	b.Close()
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("model requests = %d, want 1", n)
	}
}

// TestSwitchModelNeedsModel: switch_model without a model is refused at
// once.
func TestSwitchModelNeedsModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(`{"type":"control_request","request_id":"m-1","request":{"subtype":"switch_model"}}`)
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "error" || r.Response.RequestID != "m-1" || !strings.Contains(r.Response.Error, "needs a model") {
		t.Fatalf("response %s", r.raw)
	}
	b.Close()
}
