package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/project"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// SessionOptions shape a new or resumed session.
type SessionOptions struct {
	// Model is a model ref; "" = the configured default (or, on resume,
	// the session's own).
	Model    string
	MaxTurns int
	Title    string
	// OnTodos observes todo_write updates.
	OnTodos func([]tool.Todo)
	// Tools are added to the built-ins (the tree's tools for a node); a
	// tool named like a built-in replaces it (a client that runs shell
	// commands itself).
	Tools []tool.Tool
	// System is appended to the standing system prompt.
	System string
	// SystemBase, when not "", replaces the standing system prompt (a
	// client that writes its own, as the Claude Agent SDK's systemPrompt).
	SystemBase string
	// Gate is checked before every model call.
	Gate func(ctx context.Context, est llm.Usage, estCost float64) error
	// Charge is told each model call's usage and cost.
	Charge func(call llm.Usage, cost float64)
	// RunID and NodeID name the tree node whose agent a new session is;
	// CreateSession records them (store.Session.OwnedByNode). Empty for
	// a conversation.
	RunID  string
	NodeID int64
	// Flush is called before a step's tool results are stored
	// (agent.Config.Flush; a tree node's spawns).
	Flush func(ctx context.Context) error
	// Resendable: every message the agent is sent can be made again
	// after a crash (a tree node's), so it is stored with the answer of
	// the call it starts (agent.Config.Resendable).
	Resendable bool
	// QueueEnd: the write of the results that end a turn is queued and
	// waited for by the caller (agent.Config.QueueEnd; a tree node's,
	// with its transition).
	QueueEnd bool
	// Deferred makes CreateSession store nothing: the session is created
	// with the agent's first step, in the same transaction (a tree
	// node's, whose first step follows at once; agent.Config.Create).
	Deferred bool
	// Jobs, when set, lets shell run commands in the background
	// (run_in_background) and adds job_kill; nil refuses background
	// commands. The caller owns it and closes it when the session ends.
	Jobs *tool.Jobs
	// TurnEnded is called as each turn of the session's agent ends
	// (agent.Config.TurnEnded).
	TurnEnded func()
	// Wrap, when set, wraps every tool outside the permission decorator
	// (a client's hooks that run before the permission check).
	Wrap func(tool.Tool) tool.Tool
	// ClientHooks are a client's hooks (the Claude Agent SDK's
	// callbacks), asked before the project's at the points of the loop
	// a client cannot see from outside: PreCompact, and SessionStart
	// after a compaction. The client runs its other hooks itself.
	ClientHooks *hook.Runner
	// Transcript keeps the hooks' transcript of the session
	// (TranscriptPath) even where the project declares no hooks: a
	// client's hooks read it.
	Transcript bool
	// Only, when not nil, keeps only the tools of these names (compared
	// as the registry compares them); an empty list offers no tools.
	Only []string
	// Hide, when set, leaves out every tool (built-in, o.Tools or an MCP
	// server's) whose name it reports true for: the model is not offered
	// it and a call of it is one of an unknown tool (Claude Code's
	// disallowedTools naming a tool without a pattern).
	Hide func(name string) bool
	// Files, when set, reads and writes the files of write_file and edit
	// (an editor's buffers over ACP; tool.Files).
	Files tool.Files
}

// Session is one agent with its tools, bound to a stored session.
type Session struct {
	ID    string
	Model Model
	Agent *agent.Agent
	Todos *tool.TodoList
	// Tools are the session's tools, as offered to the model.
	Tools *tool.Registry
	// Hooks are the project's command hooks (.claude/settings.json and
	// arbor's settings.json) for this session; nil when there are none.
	// Its tools run the PreToolUse, PostToolUse and PostToolUseFailure
	// ones; front ends run
	// the others at their points of a turn.
	Hooks *hook.Runner

	// titled: the session has its title (NameConversation).
	titled atomic.Bool
}

// NewSession creates and stores a new session with a fresh id
// (WithNewID).
func (a *App) NewSession(ctx context.Context, o SessionOptions) (*Session, error) {
	return WithNewID(func(id string) (*Session, error) { return a.CreateSession(ctx, id, o) })
}

// CreateSession creates and stores a new session with the given id.
func (a *App) CreateSession(ctx context.Context, id string, o SessionOptions) (*Session, error) {
	m, err := a.Model(o.Model)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	rec := store.Session{
		ID: id, Title: o.Title, Model: m.Ref.Ref, Workspace: a.Workspace,
		Status: store.SessionIdle, CreatedAt: now, UpdatedAt: now, CostKnown: true,
		RunID: o.RunID, NodeID: o.NodeID,
	}
	if o.Deferred {
		return a.sessionWith(ctx, id, m, o, &rec), nil
	}
	if err := a.Store.CreateSession(ctx, rec); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	s := a.session(ctx, id, m, o)
	s.titled.Store(o.Title != "")
	return s, nil
}

// ResumeSession loads a stored session, completing a transcript that a
// crash left with unanswered tool calls.
func (a *App) ResumeSession(ctx context.Context, id string, o SessionOptions) (*Session, error) {
	st, err := a.Store.GetSession(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("session %s %w", id, store.ErrNotFound) // "session X not found", as Chord says
		}
		return nil, err
	}
	ref := o.Model
	if ref == "" {
		ref = st.Model
	}
	m, err := a.Model(ref)
	if err != nil {
		return nil, err
	}
	s := a.session(ctx, id, m, o)
	s.titled.Store(st.Title != "")
	s.Agent.SetTotals(st.Usage, st.CostUSD, st.CostKnown)
	if err := s.Agent.Load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (a *App) session(ctx context.Context, id string, m Model, o SessionOptions) *Session {
	return a.sessionWith(ctx, id, m, o, nil)
}

// sessionWith is session for an agent that creates its session record
// with its first step when create is set.
func (a *App) sessionWith(ctx context.Context, id string, m Model, o SessionOptions, create *store.Session) *Session {
	todos := tool.NewTodoList(o.OnTodos)
	broker := a.Broker.For(id)
	sbc := a.Config().Sandbox
	bo := tool.BuiltinOptions{Workspace: a.Workspace, Asker: broker, Todos: todos, Sandbox: a.Sandbox(),
		SandboxAsks: !sbc.AutoAllows(), SandboxOnly: !sbc.AllowsUnsandboxed(), NoImages: m.Ref.NoImages,
		Policy: a.Permissions, Files: o.Files, WithheldEnv: a.keyEnv(), Env: a.project.k.EnvList(), Roots: a.Config().AddDirs}
	// The background-capable shell and job_kill, then o.Tools, replace the
	// tools of the same name in place, or are added after them.
	tools := tool.Builtins(bo)
	if st := project.SkillTool(a.project.k); st != nil {
		tools = append(tools, st)
	}
	var extra []tool.Tool
	if o.Jobs != nil {
		extra = o.Jobs.Tools(bo)
	}
	for _, t := range append(extra, o.Tools...) {
		i := slices.IndexFunc(tools, func(u tool.Tool) bool { return tool.Name(u) == tool.Name(t) })
		if i < 0 {
			tools = append(tools, t)
		} else {
			tools[i] = t
		}
	}
	if o.Only != nil {
		keep := tool.NewRegistry()
		for _, t := range tools {
			keep.Add(t)
		}
		tools = tools[:0]
		for _, name := range o.Only {
			if t, ok := keep.Lookup(name); ok && !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	// A tool the rules deny whole is left out, as Claude Code leaves it
	// out: the model need not learn by trying. The rules as the session
	// starts decide for these; one that comes later still denies the
	// calls (the guard), while an MCP tool is left out then too (below).
	pe := a.Permissions
	tools = slices.DeleteFunc(tools, func(t tool.Tool) bool {
		name := tool.Name(t)
		return o.Hide != nil && o.Hide(name) || pe != nil && pe.DeniesWhole(name)
	})
	tools = tool.GuardAll(tools, pe, broker)
	hooks := a.sessionHooks(id)
	for i, t := range tools {
		// The project's hooks run before the permission check, as Claude
		// Code's do, and inside a client's (o.Wrap).
		tools[i] = hooked(t, hooks)
		if o.Wrap != nil {
			tools[i] = o.Wrap(tools[i])
		}
	}
	reg := tool.NewRegistry(tools...)
	// The MCP servers' tools, guarded like the others; the registry takes
	// them again when a server's list changes, or a reload changes the
	// servers (so the source is there even while none is configured).
	// A deny rule that names an MCP tool whole leaves it out, as Claude
	// Code does; rules may change while the session runs.
	hide := o.Hide
	if pe != nil {
		hide = func(name string) bool { return pe.DeniesWhole(name) || o.Hide != nil && o.Hide(name) }
	}
	var mcp tool.Source = a.MCP(ctx)
	if hide != nil {
		mcp = &hiddenSource{src: mcp, hide: hide}
	}
	reg.AddSource(mcp, func(t tool.Tool) tool.Tool {
		t = hooked(tool.Guard(t, a.Permissions, broker), hooks)
		if o.Wrap != nil {
			t = o.Wrap(t)
		}
		return t
	})
	maxTurns := o.MaxTurns
	if maxTurns <= 0 {
		maxTurns = a.Config().MaxTurns
	}
	system := a.StandingPrompt(reg.Names())
	if o.SystemBase != "" {
		// A client's own prompt replaces the standing one, not the
		// project's instructions (Claude Code keeps CLAUDE.md too).
		system = o.SystemBase + a.project.k.Prompt()
	}
	if o.System != "" {
		system += "\n" + o.System
	}
	ag := agent.New(agent.Config{
		SessionID: id, Model: m.Ref.Name, ModelRef: m.Ref.Ref, Provider: m.Provider,
		System: system, Tools: reg, Store: a.Store, Bus: a.Bus,
		Price: m.Ref.Price, MaxTurns: maxTurns, MaxTokens: m.Ref.MaxOutput,
		ContextWindow: m.Ref.ContextWindow, Secrets: a.Secrets(), Gate: o.Gate, Charge: o.Charge,
		Create: create, Flush: o.Flush, Resendable: o.Resendable, QueueEnd: o.QueueEnd, Hooks: a.newTurnHooks(id, hooks, o.ClientHooks, o.NodeID), TurnEnded: o.TurnEnded,
		ToolsLeftOut: a.toolsLeftOut,
		Compaction: agent.CompactionPolicy{
			Threshold: a.Config().Compaction.Threshold, KeepRecent: a.Config().Compaction.KeepRecent,
		},
	})
	if hooks != nil || o.Transcript {
		a.transcriptOf(id, ag)
	}
	return &Session{ID: id, Model: m, Agent: ag, Todos: todos, Tools: reg, Hooks: hooks}
}

// hiddenSource is a tool source without the tools hide reports true
// for. What hide says may change (a permission rule added), so its
// version changes when the source's does or when it leaves out other
// tools than before.
type hiddenSource struct {
	src  tool.Source
	hide func(name string) bool

	mu      sync.Mutex // guards the fields below
	version uint64     // of what Tools returns
	srcVer  uint64     // the source's version it was made from
	hidden  string     // the names it left out, joined
}

func (h *hiddenSource) Tools() (uint64, []tool.Tool) {
	v, ts := h.src.Tools()
	var kept []tool.Tool
	var hidden strings.Builder
	for _, t := range ts {
		if name := tool.Name(t); h.hide(name) {
			hidden.WriteString(name + "\x00")
		} else {
			kept = append(kept, t)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.version == 0 || v != h.srcVer || hidden.String() != h.hidden {
		h.version++
		h.srcVer, h.hidden = v, hidden.String()
	}
	return h.version, kept
}
