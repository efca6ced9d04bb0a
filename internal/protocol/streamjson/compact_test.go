package streamjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// compactLines are the lines of a bundle's output that report
// compactions, and the turns' init and result lines around them.
func compactLines(b *bundle) []string {
	var seq []string
	for _, o := range b.All {
		var m struct {
			Status        *string `json:"status"`
			CompactResult string  `json:"compact_result"`
			CompactError  string  `json:"compact_error"`
			Metadata      struct {
				Trigger string `json:"trigger"`
			} `json:"compact_metadata"`
			LocalCommand string `json:"local_command"`
		}
		_ = json.Unmarshal([]byte(o.raw), &m)
		switch {
		case o.Type == "system" && o.Subtype == "status" && m.Status != nil:
			seq = append(seq, "status "+*m.Status)
		case o.Type == "system" && o.Subtype == "status":
			seq = append(seq, strings.TrimSpace("status "+m.CompactResult+" "+m.CompactError))
		case o.Type == "system" && o.Subtype == "compact_boundary":
			seq = append(seq, "compact_boundary "+m.Metadata.Trigger)
		case o.Type == "system" && o.Subtype == "init":
			seq = append(seq, "init")
		case o.Type == "assistant":
			seq = append(seq, "assistant")
		case o.Type == "result":
			seq = append(seq, strings.TrimSpace("result "+o.Subtype+" "+m.LocalCommand))
		}
	}
	return seq
}

// TestAutoCompactionLines: a compaction the context's size started in a
// turn writes the same status and compact_boundary lines as /compact,
// with trigger "auto", inside the turn and without an init of its own.
func TestAutoCompactionLines(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "noted"}, llmtest.Turn{Text: "SUMMARY"}, llmtest.Turn{Text: "still here"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{project: "compaction: {keep_recent: 1}\nproviders:\n  anthropic:\n    models:\n      claude-test:\n        context_window: 1000\n"})
	b.Send(user(strings.Repeat("lorem ipsum ", 300)))
	b.Next(typ("result", ""))
	b.Send(user("and again"))
	b.Next(typ("result", ""))
	b.Close()
	got := strings.Join(compactLines(b), ", ")
	want := "init, assistant, result success, init, status compacting, status success, compact_boundary auto, assistant, result success"
	if got != want {
		t.Fatalf("lines\n%s\nwant\n%s", got, want)
	}
}

// TestCompactCommandFails: a /compact whose summary cannot be written
// (the model server refuses it) says so in its status line and fails its
// result; the conversation is kept whole.
func TestCompactCommandFails(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "never", Expect: "no request holds this"}, llmtest.Turn{Text: "after"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("one"))
	b.Next(typ("result", ""))
	b.Send(user("/compact"))
	r := b.Next(typ("result", ""))
	if !r.IsError || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "compaction failed") {
		t.Fatalf("result %s", r.raw)
	}
	b.Send(user("two"))
	b.Next(typ("result", ""))
	b.Close()
	seq := compactLines(b)
	if len(seq) < 6 || seq[3] != "status compacting" || !strings.HasPrefix(seq[4], "status failed ") || seq[5] != "init" {
		t.Fatalf("lines %q", seq)
	}
	// The turn after the failure reads the whole conversation.
	if reqs := srv.Requests(); len(reqs) != 3 || !strings.Contains(reqs[2].Messages[0].Text(), "one") {
		t.Fatalf("the request after the failed compaction: %+v", reqs[len(reqs)-1].Messages)
	}
}

// TestCompactListed: under Claude Code's argv, initialize's commands and
// the init line's slash_commands list the built-in compact and rename
// first, as Claude Code lists them, and a project command named compact
// does not shadow it.
func TestCompactListed(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "hi"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{ClaudeCode: true}, files: map[string]string{
		".claude/commands/compact.md": "---\ndescription: shadowed\n---\nnot used\n",
		".claude/commands/greet.md":   "---\ndescription: Greet someone\n---\nGreet $ARGUMENTS.\n",
	}})
	b.Send(initialize)
	r := b.Next(typ("control_response", "success"))
	var body struct {
		Commands []struct{ Name, Description, ArgumentHint string }
	}
	if err := json.Unmarshal(r.Response.Response, &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range body.Commands {
		names = append(names, c.Name+": "+c.Description)
	}
	if got := strings.Join(names, ", "); got != "compact: Free up context by summarizing the conversation so far, rename: Rename the current conversation, greet: Greet someone" {
		t.Fatalf("initialize's commands: %s", got)
	}
	b.Send(user("hello"))
	b.Next(typ("result", ""))
	b.Close()
	for _, o := range b.All {
		if o.Type == "system" && o.Subtype == "init" && !strings.Contains(o.raw, `"slash_commands":["compact","rename","greet"]`) {
			t.Fatalf("init line %s", o.raw)
		}
	}
}

// TestCompactInterrupted: an interrupt during /compact ends it as an
// interrupted turn ends, and the next turn reads the whole conversation.
func TestCompactInterrupted(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "first"},
		llmtest.Turn{Text: "a summary never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 1}},
		llmtest.Turn{Text: "after"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("one"))
	b.Next(typ("result", ""))
	b.Send(user("/compact"))
	b.Next(func(o out) bool {
		return o.Type == "system" && o.Subtype == "status" && strings.Contains(o.raw, `"compacting"`)
	})
	srv.WaitRequests(2) // the summary's request stalls at the server, not before it
	b.Send(`{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}`)
	r := b.Next(typ("result", ""))
	if !r.IsError || len(r.Errors) != 1 || r.Errors[0] != "[Request interrupted by user]" {
		t.Fatalf("result %s", r.raw)
	}
	b.Send(user("two"))
	if r := b.Next(typ("result", "")); r.IsError || r.Result != "after" {
		t.Fatalf("the next turn: %s", r.raw)
	}
	b.Close()
	if reqs := srv.Requests(); len(reqs) != 3 || !strings.Contains(reqs[2].Messages[0].Text(), "one") {
		t.Fatalf("the request after the interrupted compaction: %d requests", len(reqs))
	}
}
