package envelope_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

var roleFiles = map[string]string{
	".arbor/roles/planner.yaml":  "system: Plan before acting.\n",
	".arbor/roles/reviewer.yaml": "system: Review only.\n",
	".arbor/roles/auditor.yaml":  "system: Audit.\n",
	".arbor/roles/explorer.yaml": "mode: subagent\nsystem: Explore.\n",
}

// roleNames renders a role_response's roles as "name" or "name*" (current).
func roleNames(o out) string {
	var names []string
	for _, r := range o.P.Roles {
		n := r.Name
		if r.Current {
			n += "*"
		}
		names = append(names, n)
	}
	return strings.Join(names, ",")
}

func TestRole(t *testing.T) {
	t.Parallel()
	t.Run("list without role files", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"role","action":"list"}`)
		if r := b.Next(typ("role_response")); !r.P.OK || r.P.Role != "builder" || roleNames(r) != "builder*" {
			t.Fatalf("role_response %s", r.raw)
		}
		b.Close()
	})
	t.Run("list orders builder, planner, custom", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setupFiles(t, srv, roleFiles)
		b.Send(`{"type":"role","action":"list"}`)
		if r := b.Next(typ("role_response")); !r.P.OK || roleNames(r) != "builder*,planner,auditor,reviewer" {
			t.Fatalf("role_response %s", r.raw)
		}
		b.Close()
	})
	t.Run("a sub-agent definition is no main role", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setupFiles(t, srv, roleFiles)
		b.Send(`{"type":"role","action":"set","role":"explorer"}`)
		if r := b.Next(typ("role_response")); r.P.OK || r.P.Message != "role explorer is only defined for sub-agents" {
			t.Fatalf("role_response %s", r.raw)
		}
		b.Close()
	})
	t.Run("set pushes role_change and updates status", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setupFiles(t, srv, roleFiles)
		b.Send(`{"type":"role","action":"set","role":"planner"}`)
		change := b.Next(typ("role_change"))
		if change.P.Role != "planner" || change.Seq == 0 {
			t.Fatalf("role_change %s", change.raw)
		}
		if r := b.Next(typ("role_response")); !r.P.OK || r.P.Role != "planner" || roleNames(r) != "builder,planner*,auditor,reviewer" {
			t.Fatalf("role_response %s", r.raw)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); st.P.CurrentRole != "planner" || st.Seq <= change.Seq {
			t.Fatalf("status %s", st.raw)
		}
		b.Close()
		b.checkSeq()
	})
	t.Run("rejections", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setupFiles(t, srv, map[string]string{".arbor/roles/broken.yaml": "system: [unclosed\n"})
		for _, tc := range []struct{ role, want string }{
			{"builder", "already the active role: builder"},
			{"planner", "unknown role: planner"},
			{"ghost", "unknown role: ghost"},
			{"broken", "role broken:"},
			{"", "role is required"},
		} {
			b.Send(cmd(map[string]any{"type": "role", "action": "set", "role": tc.role}))
			if r := b.Next(typ("role_response")); r.P.OK || !strings.HasPrefix(r.P.Message, tc.want) {
				t.Fatalf("set %q: %s", tc.role, r.raw)
			}
		}
		b.Send(`{"type":"role","action":"fly"}`)
		if r := b.Next(typ("role_response")); r.P.OK || !strings.Contains(r.P.Message, `"fly"`) {
			t.Fatalf("unknown action %s", r.raw)
		}
		b.Close()
		for _, o := range b.All {
			if o.Type == "role_change" {
				t.Fatalf("a rejected switch pushed %s", o.raw)
			}
		}
	})
	t.Run("new sessions take the role's system text", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "planned"})
		defer srv.Close()
		b, _ := setupFiles(t, srv, roleFiles)
		b.Send(`{"type":"role","action":"set","role":"reviewer"}`, `{"type":"send","content":"/new"}`)
		b.Next(typ("session_switched"))
		b.Next(typ("idle"))
		b.Send(`{"type":"send","content":"look"}`)
		b.Next(typ("idle"))
		if reqs := srv.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].System, "Review only.") {
			t.Fatalf("system prompt lacks the role text: %+v", reqs)
		}
		b.Close()
	})
	t.Run("a switch during a turn applies from the next model request", func(t *testing.T) {
		t.Parallel()
		// The held first request calls a tool, so the same turn makes a
		// second request after the switch.
		call := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "todo_write", Input: map[string]any{
			"todos": []any{map[string]any{"id": "1", "content": "look", "status": "pending", "active_form": "looking"}}}}}}
		srv, arrived, release := heldServer(t, call)
		b, _ := setupFiles(t, srv, roleFiles)
		b.Send(`{"type":"send","content":"look"}`)
		waitClosed(t, arrived, "model request")
		b.Send(`{"type":"role","action":"set","role":"reviewer"}`)
		if r := b.Next(typ("role_response")); !r.P.OK || r.P.Role != "reviewer" {
			t.Fatalf("role set during the turn: %s", r.raw)
		}
		close(release)
		b.Next(typ("idle"))
		b.Close()
		reqs := srv.Requests()
		if len(reqs) != 2 || strings.Contains(reqs[0].System, "Review only.") || !strings.Contains(reqs[1].System, "Review only.") {
			t.Fatalf("the role's text must reach the second request only: %+v", reqs)
		}
	})
}
