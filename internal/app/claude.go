package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/runner/claudecode"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// RunnerClaudeCode names the Claude Code CLI as a node runner.
const RunnerClaudeCode = "claude-code"

// ErrNoClaude: the Claude Code CLI was not found.
var ErrNoClaude = errors.New("the Claude Code CLI (claude) was not found: put it on PATH, or set ARBOR_CLAUDE or config claude_path")

// runners are the external node runners of this app's engines.
func (a *App) runners() map[string]tree.Runner {
	return map[string]tree.Runner{RunnerClaudeCode: &claudeRunner{app: a}}
}

// claudePath is the claude executable: env ARBOR_CLAUDE, else config
// claude_path, else claude on PATH.
func (a *App) claudePath() (string, error) {
	if p := a.getenv("ARBOR_CLAUDE"); p != "" {
		return p, nil
	}
	if p := a.Config().ClaudePath; p != "" {
		return p, nil
	}
	p, err := exec.LookPath("claude")
	if err != nil {
		return "", ErrNoClaude
	}
	return p, nil
}

// claudeRunner runs node turns in the Claude Code CLI (see package
// claudecode): its tree tools are arbor mcp --node, its permission
// prompts are decided by the app's permission engine and put to the
// person through the node session's broker, its result's usage and cost
// are charged to the node, and its texts are kept as the node's session.
type claudeRunner struct{ app *App }

func (c *claudeRunner) RunTurn(ctx context.Context, t tree.ExternalTurn) agent.Result {
	a, spec := c.app, t.Spec
	fail := func(err error) agent.Result { return agent.Result{Outcome: agent.OutcomeFailed, Err: err} }
	path, err := a.claudePath()
	if err != nil {
		return fail(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("find arbor's executable for the node's MCP server: %w", err))
	}
	if err := c.session(ctx, spec); err != nil {
		return fail(err)
	}
	// A first turn may find its Claude Code session begun: an earlier
	// arbor process started the turn and was stopped (Ctrl-C, a crash).
	// Claude Code refuses to begin a session twice, so it is resumed and
	// told what happened; the node's prompt is in it already.
	if !t.Resume {
		begun, err := c.begun(ctx, spec.SessionID)
		if err != nil {
			return fail(err)
		}
		if begun {
			t.Resume, t.Message = true, continueText
		}
	}
	record := func(m llm.Message) {
		_, _ = a.Store.AppendMessages(context.WithoutCancel(ctx), spec.SessionID, m)
	}
	broker := a.Broker.For(spec.SessionID)
	// The node's arbor mcp opens this store: a SQLite file by --store, a
	// database URL (with its password) through the environment, never on
	// a command line.
	mcpArgs := []string{"mcp", "-C", a.Workspace, "--run", spec.RunID, "--node", strconv.FormatInt(spec.NodeID, 10)}
	var mcpEnv map[string]string
	if u := a.Config().StoreURL(); u != "" {
		mcpEnv = map[string]string{"ARBOR_STORE": u}
	} else {
		mcpArgs = append(mcpArgs, "--store", a.StoreArg())
	}
	o := claudecode.Options{
		Path: path, Dir: a.Workspace, Env: os.Environ(),
		MCPCommand: exe, MCPArgs: mcpArgs, MCPEnv: mcpEnv,
		Model: c.model(spec),
		Permit: func(ctx context.Context, name, id string, input json.RawMessage) (bool, string) {
			g := tool.Guard(&claudeTool{name: name}, a.Permissions, broker)
			res := g.Run(ctx, tool.Call{ID: id, Input: input})
			return !res.IsError, res.Content
		},
		OnEvent: func(e claudecode.Event) {
			switch e.Kind {
			case "init": // the turn's message is in the session now (see begun)
				record(llm.UserText(t.Message))
			case "assistant":
				record(llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart(e.Text)}})
			}
		},
	}
	res, err := claudecode.Run(ctx, o, claudecode.Turn{SessionKey: spec.SessionID, Resume: t.Resume, Message: t.Message})
	c.charge(context.WithoutCancel(ctx), spec, res)
	switch {
	case ctx.Err() != nil:
		return agent.Result{Outcome: agent.OutcomeCancelled, Err: err}
	case err != nil:
		return fail(err)
	case res.IsError:
		return fail(fmt.Errorf("claude code: %s", res.Text))
	}
	return agent.Result{Outcome: agent.OutcomeCompleted, Text: res.Text}
}

// charge charges the turn's spend (an interrupted turn's too: its result
// reports what it used) to the node's budgets, records it on the node's
// session and tells the bus, as an agent's model call does.
func (c *claudeRunner) charge(ctx context.Context, spec tree.AgentSpec, res claudecode.Result) {
	if res.Usage == (llm.Usage{}) && res.CostUSD == 0 {
		return
	}
	if spec.Charge != nil {
		spec.Charge(res.Usage, res.CostUSD)
	}
	a := c.app
	if err := a.Store.AddUsage(ctx, store.UsageRecord{
		SessionID: spec.SessionID, Model: RunnerClaudeCode, Usage: res.Usage,
		CostUSD: res.CostUSD, CostKnown: true, At: time.Now().UTC(),
	}); err != nil {
		return
	}
	s, err := a.Store.GetSession(ctx, spec.SessionID)
	if err != nil {
		return
	}
	a.Bus.Publish(&agent.UsageUpdated{Meta: agent.Meta{SessionID: spec.SessionID}, Model: RunnerClaudeCode,
		Call: res.Usage, CallCost: res.CostUSD, Total: s.Usage, TotalCost: s.CostUSD, CostKnown: true})
}

// continueText is the message of a turn that continues a Claude Code
// session an earlier arbor process left unfinished.
const continueText = "arbor was stopped while you worked on this task, and has now resumed it. Continue your task."

// begun reports whether Claude Code has begun the node's session: the
// transcript holds a turn's message only once Claude Code has started
// the session (its init).
func (c *claudeRunner) begun(ctx context.Context, session string) (bool, error) {
	ms, err := c.app.Store.Messages(ctx, session, 0)
	if err != nil {
		return false, fmt.Errorf("read the transcript of %s: %w", session, err)
	}
	return len(ms) > 0, nil
}

// session makes sure the node's session (its transcript) exists.
func (c *claudeRunner) session(ctx context.Context, spec tree.AgentSpec) error {
	_, err := c.app.Store.GetSession(ctx, spec.SessionID)
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return c.app.Store.CreateSession(ctx, store.Session{
		ID: spec.SessionID, Title: spec.Title, Model: RunnerClaudeCode, Workspace: c.app.Workspace,
		RunID: spec.RunID, NodeID: spec.NodeID,
	})
}

// model is the --model of the node's Claude Code: the name of the node's
// (or run's) model when it is an Anthropic one, else Claude Code's own.
func (c *claudeRunner) model(spec tree.AgentSpec) string {
	m, err := c.app.Model(spec.Model)
	if err != nil || m.Ref.Type != "anthropic" {
		return ""
	}
	return m.Ref.Name
}

// claudeTool stands for one of Claude Code's tools in arbor's permission
// check: its kind and target are read from the call's input.
type claudeTool struct{ name string }

func (t *claudeTool) Info() tool.Info {
	k := tool.KindExecute
	switch {
	case strings.HasPrefix(t.name, "mcp__arbor__"):
		k = tool.KindInteract // the node's own tree tools, as in-process
	}
	switch t.name {
	case "Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "NotebookRead":
		k = tool.KindRead
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		k = tool.KindWrite
	}
	return tool.Info{Name: t.name, Kind: k}
}

func (t *claudeTool) Target(in json.RawMessage) (tool.Target, error) {
	var a struct {
		Command      string `json:"command"`
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
	}
	_ = json.Unmarshal(in, &a)
	var tg tool.Target
	if t.name == "Bash" {
		tg.Command = a.Command
	}
	for _, p := range []string{a.FilePath, a.NotebookPath, a.Path} {
		if p != "" {
			tg.Paths = append(tg.Paths, p)
		}
	}
	return tg, nil
}

// Run is reached only when the call is allowed: Claude Code runs it.
func (t *claudeTool) Run(context.Context, tool.Call) tool.Result {
	return tool.Result{Content: "allowed"}
}
