package acp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestSessionClose: arbor advertises session/close, and closing a session
// cancels its running prompt (answered cancelled), answers {}, and frees
// the session: another close or a prompt to it is Resource not found
// (-32002, which the ACP SDK's client takes as closed already), and
// session/load opens it again. An editor opens a session per thread;
// before, each stayed in memory, with its tree's lease and its view of
// the workspace, until the editor disconnected.
func TestSessionClose(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.Turn{Text: "a long answer that never ends", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}})
	b.Send(initialize)
	if o := b.Next(id(1)); o.Error != nil || !strings.Contains(string(o.Result), `"sessionCapabilities":{"close":{},"list":{},"resume":{}}`) {
		t.Fatalf("initialize answered %s; want session/close, session/list and session/resume advertised", o.raw)
	}
	b.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, b.ws))
	o := b.Next(id(2))
	sid := between(string(o.Result), `"sessionId":"`, `"`)
	if o.Error != nil || sid == "" {
		t.Fatalf("session/new answered %s", o.raw)
	}
	closeLine := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/close","params":{"sessionId":%q}}`, n, sid)
	}
	b.Send(promptLine(3, sid, "tell a story"))
	b.srv.WaitRequests(1) // the turn waits on the stalled model
	b.Send(closeLine(4))
	if o := b.Next(id(3)); o.Error != nil || !strings.Contains(string(o.Result), `"cancelled"`) {
		t.Fatalf("the prompt of a closed session answered %s; want cancelled", o.raw)
	}
	if o := b.Next(id(4)); o.Error != nil || string(o.Result) != "{}" {
		t.Fatalf("session/close answered %s; want {}", o.raw)
	}
	b.Send(closeLine(5))
	wantError(t, b.Next(id(5)), -32002, "no open session")
	b.Send(promptLine(6, sid, "hello?"))
	wantError(t, b.Next(id(6)), -32002, "no open session")
	b.Send(`{"jsonrpc":"2.0","id":7,"method":"session/close","params":{}}`)
	wantError(t, b.Next(id(7)), -32002, "no open session")
	b.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`, sid, b.ws))
	if o := b.Next(id(8)); o.Error != nil {
		t.Fatalf("session/load of a closed session answered %s", o.raw)
	}
	b.Send(closeLine(9))
	if o := b.Next(id(9)); o.Error != nil || string(o.Result) != "{}" {
		t.Fatalf("closing the loaded session answered %s; want {}", o.raw)
	}
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
}

// between is the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, after, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, to)
	return v
}
