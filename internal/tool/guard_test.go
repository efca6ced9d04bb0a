package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// fakeTool records the inputs it ran with; its input is {"path", "command"}.
type fakeTool struct {
	name string
	kind tool.Kind

	mu   sync.Mutex // guards runs
	runs []string
}

type fakeArgs struct {
	Path    string `json:"path"`
	Command string `json:"command"`
}

func (f *fakeTool) Info() tool.Info {
	return tool.Info{Name: f.name, Description: "fake", Kind: f.kind, Schema: json.RawMessage(`{"type":"object"}`)}
}

func (f *fakeTool) Target(input json.RawMessage) (tool.Target, error) {
	var a fakeArgs
	if err := json.Unmarshal(input, &a); err != nil {
		return tool.Target{}, err
	}
	t := tool.Target{Command: a.Command}
	if a.Path != "" {
		t.Paths = []string{a.Path}
	}
	return t, nil
}

func (f *fakeTool) Run(_ context.Context, call tool.Call) tool.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, string(call.Input))
	return tool.Result{Content: "ran " + string(call.Input)}
}

func (f *fakeTool) ran() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runs...)
}

// fakeApprover answers every request the same way and records them. With
// wait set it blocks until the context ends.
type fakeApprover struct {
	answer tool.Approval
	err    error
	wait   bool

	mu   sync.Mutex // guards reqs
	reqs []tool.ApprovalRequest
}

func (a *fakeApprover) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	if a.wait {
		<-ctx.Done()
		return tool.Approval{}, ctx.Err()
	}
	return a.answer, a.err
}

func (a *fakeApprover) asked() []tool.ApprovalRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]tool.ApprovalRequest(nil), a.reqs...)
}

type guardBundle struct {
	ws     string
	engine *permission.Engine
	shell  *fakeTool
	writer *fakeTool
	reader *fakeTool
}

func setupGuard(t *testing.T, mode permission.Mode, rules ...string) *guardBundle {
	t.Helper()
	ws := t.TempDir()
	e, err := permission.New(permission.Options{Mode: mode, Workspace: ws, ProjectFile: permission.DefaultProjectFile(ws)})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range rules {
		action, rule, _ := strings.Cut(spec, " ")
		r, err := permission.ParseRule(rule, permission.Action(action), permission.ScopeSession)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	return &guardBundle{
		ws:     ws,
		engine: e,
		shell:  &fakeTool{name: "shell", kind: tool.KindExecute},
		writer: &fakeTool{name: "write_file", kind: tool.KindWrite},
		reader: &fakeTool{name: "read_file", kind: tool.KindRead},
	}
}

func run(t tool.Tool, p tool.Policy, a tool.Approver, input string) tool.Result {
	return tool.Guard(t, p, a).Run(context.Background(), tool.Call{ID: "call-1", Input: json.RawMessage(input)})
}

func cmd(c string) string {
	b, _ := json.Marshal(fakeArgs{Command: c})
	return string(b)
}

func path(p string) string {
	b, _ := json.Marshal(fakeArgs{Path: p})
	return string(b)
}

func requireResult(t *testing.T, r tool.Result, isError bool, contains string) {
	t.Helper()
	if r.IsError != isError || !strings.Contains(r.Content, contains) {
		t.Fatalf("result = %+v, want IsError=%v containing %q", r, isError, contains)
	}
}

func requireRuns(t *testing.T, f *fakeTool, want ...string) {
	t.Helper()
	if got := f.ran(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s ran with %q, want %q", f.name, got, want)
	}
}

func TestGuardDecisions(t *testing.T) {
	t.Parallel()
	t.Run("deny does not run or ask", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeTrust, "deny shell(rm *)")
		a := &fakeApprover{answer: tool.Approval{Allow: true}}
		requireResult(t, run(b.shell, b.engine, a, cmd("rm -rf /")), true, "permission denied: rule shell(rm *)")
		requireRuns(t, b.shell)
		if len(a.asked()) != 0 {
			t.Fatal("the approver was asked about a denied call")
		}
	})
	t.Run("workspace escape is denied", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeTrust)
		requireResult(t, run(b.reader, b.engine, nil, path("/etc/passwd")), true, "permission denied: \"/etc/passwd\" is outside the workspace")
		requireRuns(t, b.reader)
	})
	t.Run("allow runs without asking", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault, "allow shell(go *)")
		a := &fakeApprover{}
		requireResult(t, run(b.reader, b.engine, a, path("a.txt")), false, "ran")
		requireResult(t, run(b.shell, b.engine, a, cmd("go test ./...")), false, "ran")
		interact := &fakeTool{name: "ask_user", kind: tool.KindInteract}
		requireResult(t, run(interact, b.engine, a, `{}`), false, "ran")
		if len(a.asked()) != 0 {
			t.Fatalf("the approver was asked %d times", len(a.asked()))
		}
	})
	t.Run("invalid arguments", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeTrust)
		requireResult(t, run(b.shell, b.engine, nil, `{"command": 7}`), true, "invalid arguments for shell: ")
		requireRuns(t, b.shell)
	})
	t.Run("typed adapter argument errors are reported once", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeTrust)
		typed := tool.New("typed", "d", tool.KindRead, func(context.Context, tool.Call, struct {
			Path string `json:"path"`
		}) tool.Result {
			return tool.Result{Content: "ran"}
		})
		r := run(typed, b.engine, nil, `{}`)
		requireResult(t, r, true, `invalid arguments for typed: missing required field "path"`)
		if n := strings.Count(r.Content, "invalid arguments"); n != 1 {
			t.Fatalf("prefix repeated %d times: %q", n, r.Content)
		}
	})
	t.Run("unknown kinds are treated as commands", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeAutoEdit)
		odd := &fakeTool{name: "odd", kind: tool.Kind(42)}
		requireResult(t, run(odd, b.engine, nil, path("a.txt")), true, "approval needed")
	})
}

func TestGuardAsk(t *testing.T) {
	t.Parallel()
	t.Run("approved call runs and the request is complete", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		a := &fakeApprover{answer: tool.Approval{Allow: true}}
		in := path("src/main.go")
		requireResult(t, run(b.writer, b.engine, a, in), false, "ran")
		requireRuns(t, b.writer, in)
		reqs := a.asked()
		if len(reqs) != 1 {
			t.Fatalf("asked %d times, want 1", len(reqs))
		}
		got := reqs[0]
		if got.CallID != "call-1" || got.Tool != "write_file" || got.Kind != tool.KindWrite || string(got.Input) != in ||
			fmt.Sprint(got.Target.Paths) != "[src/main.go]" || got.Reason == "" || got.SuggestedRule != "write_file(src/**)" {
			t.Fatalf("approval request = %+v", got)
		}
	})
	t.Run("denied with and without a message", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		r := run(b.shell, b.engine, &fakeApprover{answer: tool.Approval{Message: "use make instead"}}, cmd("go build"))
		requireResult(t, r, true, "the user denied this call: use make instead")
		r = run(b.shell, b.engine, &fakeApprover{}, cmd("go build"))
		if r.Content != "the user denied this call" || !r.IsError {
			t.Fatalf("result = %+v", r)
		}
		requireRuns(t, b.shell)
	})
	t.Run("nobody to ask", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		requireResult(t, run(b.shell, b.engine, nil, cmd("ls")), true, "approval needed but no one can approve it: run with --yes, or choose --mode trust/auto-edit")
		noOne := &fakeApprover{err: fmt.Errorf("stdin is a pipe: %w", tool.ErrNoApprover)}
		requireResult(t, run(b.shell, b.engine, noOne, cmd("ls")), true, "run with --yes")
		requireRuns(t, b.shell)
	})
	t.Run("cancelled while asking", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		g := tool.Guard(b.shell, b.engine, &fakeApprover{wait: true})
		r := g.Run(ctx, tool.Call{ID: "c", Input: json.RawMessage(cmd("ls"))})
		if r.Content != "cancelled" || !r.IsError {
			t.Fatalf("result = %+v", r)
		}
		requireRuns(t, b.shell)
	})
	t.Run("approver failure", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		requireResult(t, run(b.shell, b.engine, &fakeApprover{err: errors.New("client went away")}, cmd("ls")), true, "client went away")
		requireRuns(t, b.shell)
	})
}

func TestGuardRemember(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		answer  tool.Approval
		want    string // rule added
		coversX string // a later call the rule now allows without asking
	}{
		{"suggested rule", cmd("go test ./..."), tool.Approval{Allow: true, RememberScope: "session"}, "shell(go test *)", cmd("go test -run X ./x")},
		{"explicit rule", cmd("git status"), tool.Approval{Allow: true, RememberScope: "project", RulePattern: "shell(git *)"}, "shell(git *)", cmd("git log")},
		{"bare pattern", cmd("git status"), tool.Approval{Allow: true, RememberScope: "session", RulePattern: "git status*"}, "shell(git status*)", cmd("git status -s")},
		{"no suggestion: the tool", cmd("make && make install"), tool.Approval{Allow: true, RememberScope: "session"}, "shell", cmd("anything")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupGuard(t, permission.ModeDefault)
			requireResult(t, run(b.shell, b.engine, &fakeApprover{answer: tt.answer}, tt.input), false, "ran")
			rules := b.engine.Rules()
			if len(rules) != 1 || rules[0].String() != tt.want || string(rules[0].Scope) != tt.answer.RememberScope || rules[0].Action != permission.Allow {
				t.Fatalf("rules = %+v, want allow %s in %s", rules, tt.want, tt.answer.RememberScope)
			}
			requireResult(t, run(b.shell, b.engine, nil, tt.coversX), false, "ran")
		})
	}
	t.Run("persisted for a new engine", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		run(b.writer, b.engine, &fakeApprover{answer: tool.Approval{Allow: true, RememberScope: "project"}}, path("docs/a.md"))
		e, err := permission.New(permission.Options{Workspace: b.ws, ProjectFile: filepath.Join(b.ws, ".arbor", "permissions.yaml")})
		if err != nil {
			t.Fatal(err)
		}
		requireResult(t, run(b.writer, e, nil, path("docs/b/c.md")), false, "ran")
		if _, err := os.Stat(filepath.Join(b.ws, ".arbor", "permissions.yaml")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a scope that cannot be saved is reported, the call runs", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault) // persists no user scope
		for scope, note := range map[string]string{"galaxy": "invalid rule scope", "user_global": "rule scope is not persisted"} {
			r := run(b.shell, b.engine, &fakeApprover{answer: tool.Approval{Allow: true, RememberScope: scope}}, cmd("ls"))
			requireResult(t, r, false, "ran")
			requireResult(t, r, false, "the approval was not remembered: "+note)
		}
		requireRuns(t, b.shell, cmd("ls"), cmd("ls"))
		if len(b.engine.Rules()) != 0 {
			t.Fatalf("rules = %+v, want none", b.engine.Rules())
		}
	})
}

func TestGuardUpdatedInput(t *testing.T) {
	t.Parallel()
	t.Run("runs with the edited input", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		edited := cmd("go test ./internal/...")
		requireResult(t, run(b.shell, b.engine, &fakeApprover{answer: tool.Approval{Allow: true, UpdatedInput: json.RawMessage(edited)}}, cmd("go test ./...")), false, "ran")
		requireRuns(t, b.shell, edited)
	})
	t.Run("a deny on the edited input wins", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault, "deny shell(rm *)")
		a := &fakeApprover{answer: tool.Approval{Allow: true, UpdatedInput: json.RawMessage(cmd("ls; rm -rf /"))}}
		requireResult(t, run(b.shell, b.engine, a, cmd("ls -la")), true, "permission denied: rule shell(rm *)")
		requireRuns(t, b.shell)
	})
	t.Run("an edited path outside the workspace is denied", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		a := &fakeApprover{answer: tool.Approval{Allow: true, UpdatedInput: json.RawMessage(path("../../etc/x"))}}
		requireResult(t, run(b.writer, b.engine, a, path("a.txt")), true, "outside the workspace")
		requireRuns(t, b.writer)
	})
	t.Run("invalid edited input", func(t *testing.T) {
		t.Parallel()
		b := setupGuard(t, permission.ModeDefault)
		a := &fakeApprover{answer: tool.Approval{Allow: true, UpdatedInput: json.RawMessage(`[1]`)}}
		requireResult(t, run(b.shell, b.engine, a, cmd("ls")), true, "invalid arguments for shell (as edited by the approver)")
		requireRuns(t, b.shell)
	})
}

// failingPolicy asks about everything and cannot save rules.
type failingPolicy struct{}

func (failingPolicy) Decide(permission.Request) permission.Decision {
	return permission.Decision{Action: permission.Ask, Reason: "always asks", SuggestedRule: "shell(ls *)"}
}

func (failingPolicy) AddRule(permission.Rule) error { return errors.New("disk full") }

func TestGuardAddRuleErrorIsReported(t *testing.T) {
	t.Parallel()
	sh := &fakeTool{name: "shell", kind: tool.KindExecute}
	r := run(sh, failingPolicy{}, &fakeApprover{answer: tool.Approval{Allow: true, RememberScope: "user"}}, cmd("ls"))
	requireResult(t, r, false, "ran")
	requireResult(t, r, false, "disk full")
	requireRuns(t, sh, cmd("ls"))
}

func TestGuardOnce(t *testing.T) {
	t.Parallel()
	b := setupGuard(t, permission.ModeDefault)
	g := tool.Guard(b.shell, b.engine, nil)
	if again := tool.Guard(g, failingPolicy{}, &fakeApprover{}); again != g {
		t.Fatal("guarding a guarded tool wrapped it again")
	}
	all := tool.GuardAll([]tool.Tool{g, b.reader}, b.engine, nil)
	if all[0] != g || all[1] == tool.Tool(b.reader) {
		t.Fatalf("GuardAll = %v", all)
	}
	if all[1].Info().Name != "read_file" {
		t.Fatalf("Info not delegated: %+v", all[1].Info())
	}
	target, err := all[1].Target(json.RawMessage(path("x/y")))
	if err != nil || target.Main() != "x/y" {
		t.Fatalf("Target not delegated: %+v, %v", target, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Guard accepted a nil policy")
		}
	}()
	tool.Guard(b.shell, nil, nil)
}
