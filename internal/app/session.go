package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// SessionOptions shape a new or resumed session.
type SessionOptions struct {
	// Model is a model ref; "" = the configured default.
	Model    string
	MaxTurns int
	Title    string
	// OnTodos observes todo_write updates.
	OnTodos func([]tool.Todo)
}

// Session is one agent with its tools, bound to a stored session.
type Session struct {
	ID    string
	Model Model
	Agent *agent.Agent
	Todos *tool.TodoList
}

// NewSession creates and stores a new session.
func (a *App) NewSession(ctx context.Context, o SessionOptions) (*Session, error) {
	id := NewID()
	m, err := a.ResolveModel(o.Model, id)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	err = a.Store.CreateSession(ctx, store.Session{
		ID: id, Title: o.Title, Model: m.Ref.Ref, Workspace: a.Workspace,
		Status: store.SessionIdle, CreatedAt: now, UpdatedAt: now, CostKnown: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	return a.session(id, m, o), nil
}

// ResumeSession loads a stored session, completing a transcript that a
// crash left with unanswered tool calls. An empty model keeps the
// session's own.
func (a *App) ResumeSession(ctx context.Context, id string, o SessionOptions) (*Session, error) {
	st, err := a.Store.GetSession(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("session %s: %w", id, err)
		}
		return nil, err
	}
	ref := o.Model
	if ref == "" {
		ref = st.Model
	}
	m, err := a.ResolveModel(ref, id)
	if err != nil {
		return nil, err
	}
	s := a.session(id, m, o)
	s.Agent.SetTotals(st.Usage, st.CostUSD, st.CostKnown)
	if err := s.Agent.Load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (a *App) session(id string, m Model, o SessionOptions) *Session {
	todos := tool.NewTodoList(o.OnTodos)
	broker := a.Broker.For(id)
	builtins := tool.Builtins(tool.BuiltinOptions{Workspace: a.Workspace, Asker: broker, Todos: todos})
	reg := tool.NewRegistry(tool.GuardAll(builtins, a.Permissions, broker)...)
	maxTurns := o.MaxTurns
	if maxTurns <= 0 {
		maxTurns = a.Config.MaxTurns
	}
	ag := agent.New(agent.Config{
		SessionID: id, Model: m.Ref.Name, ModelRef: m.Ref.Ref, Provider: m.Provider,
		System: SystemPrompt(a.Workspace, reg.Names()), Tools: reg, Store: a.Store, Bus: a.Bus,
		Price: m.Ref.Price, MaxTurns: maxTurns, MaxTokens: m.Ref.MaxOutput,
		ContextWindow: m.Ref.ContextWindow, Secrets: a.secrets(),
		Compaction: agent.CompactionPolicy{
			Threshold: a.Config.Compaction.Threshold, KeepRecent: a.Config.Compaction.KeepRecent,
		},
	})
	return &Session{ID: id, Model: m, Agent: ag, Todos: todos}
}
