package envelope_test

// The hooks and checks of golden cases: what they do outside the
// protocol, during a run or after its replay.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/golden"
)

// touchOn makes a hook that creates the workspace file name when a line
// of type typ arrives.
func touchOn(typ, name string) func(*testing.T, string, line) {
	return func(t *testing.T, ws string, l line) {
		if l.Type != typ {
			return
		}
		if err := os.WriteFile(filepath.Join(ws, name), nil, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// checkSavedRule checks, after a case that saved a rule in scope (project
// or user), that the rule landed in that scope's file of the role
// (builder) and only there, that the role-less files stay empty, and
// that a new process on the same configuration does not ask again for a
// matching call (for the user scope, in another workspace): of writes to
// c.txt and d.md, only those of wantAsked are asked.
func checkSavedRule(scope, want string, wantAsked ...string) func(*testing.T, string) {
	return func(t *testing.T, home string) {
		for _, path := range []string{filepath.Join(home, "ws", ".arbor", "permissions.yaml"), filepath.Join(home, "config", "arbor", "permissions.yaml")} {
			if rules := readRules(t, path); len(rules) != 0 {
				t.Fatalf("%s holds %v; rules are saved per role", path, rules)
			}
		}
		files := map[string]string{
			"project": filepath.Join(home, "ws", ".arbor", "agents", "builder.yaml"),
			"user":    filepath.Join(home, "config", "arbor", "agents", "builder.yaml"),
		}
		for s, path := range files {
			rules := readRoleRules(t, path)
			if s != scope {
				if len(rules) != 0 {
					t.Fatalf("%s rules %v; the rule belongs to the %s scope", s, rules, scope)
				}
				continue
			}
			if len(rules) != 1 || rules[0] != (savedRule{Rule: want, Action: "allow"}) {
				t.Fatalf("%s rules %v, want [{%s allow}]", s, rules, want)
			}
		}

		ws := filepath.Join(home, "ws")
		if scope == "user" {
			ws = filepath.Join(home, "other")
		}
		srv := llmtest.NewServer(goldenWrite("c.txt"), goldenWrite("d.md"), goldenText("done", "created d.md"))
		t.Cleanup(srv.Close)
		r := startRun(t, reopenApp(t, srv.URL, home, ws), home, ws)
		var asked []string
		note := func(l line, _ any) {
			if l.Type != "confirm_request" {
				return
			}
			var args struct{ Path string }
			if err := json.Unmarshal([]byte(l.Payload.ArgsJSON), &args); err != nil {
				t.Fatalf("confirm_request args_json %q: %v", l.Payload.ArgsJSON, err)
			}
			asked = append(asked, args.Path)
		}
		r.sendIn(golden.Object{{Key: "type", Value: "send"}, {Key: "content", Value: "write more"}})
		r.until(func(l line) bool {
			if l.Type == "confirm_request" {
				r.sendIn(golden.Object{{Key: "type", Value: "confirm"}, {Key: "request_id", Value: l.Payload.RequestID}, {Key: "action", Value: "allow"}})
			}
			return l.Type == "idle"
		}, note)
		r.finish(note)
		if !slices.Equal(asked, wantAsked) {
			t.Fatalf("a new process asked for %q, want %q", asked, wantAsked)
		}
		for _, name := range []string{"c.txt", "d.md"} {
			if _, err := os.Stat(filepath.Join(ws, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

type savedRule struct {
	Rule   string `yaml:"rule"`
	Action string `yaml:"action"`
}

// readRules reads a permission rule file; a missing one holds none.
func readRules(t *testing.T, path string) []savedRule {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Rules []savedRule `yaml:"rules"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f.Rules
}

// readRoleRules reads a role rule file (permission: {tool: action |
// {pattern: action}}) as rules in arbor's form; a missing one holds none.
func readRoleRules(t *testing.T, path string) []savedRule {
	t.Helper()
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Permission yaml.Node `yaml:"permission"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []savedRule
	perm := f.Permission.Content
	for i := 0; i+1 < len(perm); i += 2 {
		tool, v := perm[i].Value, perm[i+1]
		if v.Kind == yaml.ScalarNode {
			out = append(out, savedRule{Rule: tool, Action: v.Value})
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			r := tool + "(" + v.Content[j].Value + ")"
			if v.Content[j].Value == "*" {
				r = tool
			}
			out = append(out, savedRule{Rule: r, Action: v.Content[j+1].Value})
		}
	}
	return out
}

// reopenApp opens an app in workspace ws with the configuration and state
// of home, as a new arbor process would, with its model at modelURL.
func reopenApp(t *testing.T, modelURL, home, ws string) *app.App {
	t.Helper()
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"ANTHROPIC_BASE_URL": modelURL, "ANTHROPIC_API_KEY": "test-key-123",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home,
	}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}
