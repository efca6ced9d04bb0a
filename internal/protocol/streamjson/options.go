package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/protocol/dialect"
)

// initSettings are what a client's initialize request sets for the
// session it creates (the Claude Agent SDK sends its systemPrompt,
// appendSystemPrompt and hooks there, not in argv).
type initSettings struct {
	systemBase   string // replaces arbor's system prompt when not ""
	appendSystem string
	hooks        map[hook.Event][]hook.Matcher
}

// systemPromptIn is the initialize request's systemPrompt: a string, an
// array of strings (joined), or the preset {type: "preset", preset,
// append}, which keeps arbor's own prompt and appends to it.
func parseSystemPrompt(raw json.RawMessage) (base, appendText string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, "", nil
	}
	var parts []string
	if json.Unmarshal(raw, &parts) == nil {
		return strings.Join(parts, "\n\n"), "", nil
	}
	var preset struct {
		Type   string `json:"type"`
		Preset string `json:"preset"`
		Append string `json:"append"`
	}
	if json.Unmarshal(raw, &preset) == nil && preset.Type == "preset" {
		return "", preset.Append, nil
	}
	return "", "", fmt.Errorf("initialize: systemPrompt %s is neither a string, an array of strings nor a preset", raw)
}

// applyInitialize takes the settings of an initialize request; it fails
// when they can no longer apply (the session exists) or are not supported,
// so that nothing the client asked for is silently dropped.
func (s *Server) applyInitialize(p controlPayload) (initApplied, error) {
	base, extra, err := parseSystemPrompt(p.SystemPrompt)
	if err != nil {
		return initApplied{}, err
	}
	hooks, unfired, err := s.parseHooks(p.Hooks)
	if err != nil {
		return initApplied{}, err
	}
	if err := s.unsupportedFields(p); err != nil {
		return initApplied{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	asks := base != "" || extra != "" || p.AppendSystemPrompt != "" || len(hooks) > 0
	if s.sess != nil && asks {
		return initApplied{}, errors.New("initialize: the session already exists, so its system prompt and hooks can no longer be set")
	}
	applied, err := s.launchFields(p)
	if err != nil {
		return initApplied{}, err
	}
	s.initialized = true
	applied.UnfiredHooks = unfired
	s.init = initSettings{systemBase: base, appendSystem: joinNonEmpty("\n", extra, p.AppendSystemPrompt), hooks: hooks}
	s.hooks.Set(hooks)
	return applied, nil
}

func joinNonEmpty(sep string, xs ...string) string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, sep)
}

// errBudget stops model calls once the session's cost reaches
// --max-budget-usd.
var errBudget = errors.New("maximum budget reached")

// budgetGate is checked before every model call. Like Claude Code, it
// stops once the budget is reached, not before a call that may pass it.
func (s *Server) budgetGate(_ context.Context, _ llm.Usage, _ float64) error {
	sess := s.current()
	if sess == nil {
		return nil
	}
	if _, cost, _ := sess.Agent.Usage(); cost >= s.opts.MaxBudgetUSD {
		return fmt.Errorf("%w: the session has cost $%.4f, --max-budget-usd is $%.4f", errBudget, cost, s.opts.MaxBudgetUSD)
	}
	return nil
}

// fork starts a new session (a fresh UUID, or --session-id) holding the
// conversation of the stored session from; from is left untouched.
func (s *Server) fork(ctx context.Context, from string, o app.SessionOptions) (*app.Session, error) {
	st, err := s.app.Store.GetSession(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("fork session %s: %w", from, err)
	}
	recs, err := s.app.Store.Messages(ctx, from, 0)
	if err != nil {
		return nil, fmt.Errorf("fork session %s: %w", from, err)
	}
	id := s.opts.SessionID
	if id == "" {
		id = newUUID()
	}
	if o.Model == "" {
		o.Model = st.Model
	}
	if o.Title == "" {
		o.Title = st.Title // the fork is the same conversation's
	}
	if _, err := s.app.CreateSession(ctx, id, o); err != nil {
		return nil, fmt.Errorf("fork session %s: %w", from, err)
	}
	if len(recs) > 0 {
		msgs := make([]llm.Message, len(recs))
		for i, r := range recs {
			msgs[i] = r.Message
		}
		if _, err := s.app.Store.AppendMessages(ctx, id, msgs...); err != nil {
			return nil, fmt.Errorf("fork session %s: %w", from, err)
		}
	}
	return s.app.ResumeSession(ctx, id, o)
}

// claudeAliases are Claude Code's model aliases.
var claudeAliases = map[string]bool{"sonnet": true, "opus": true, "haiku": true}

// resolveAlias turns Claude Code's model alias (sonnet, opus, haiku)
// into a configured model: one of that exact name if the config has it,
// else the newest-named configured model whose name contains the alias,
// Anthropic's first. Other references are returned unchanged.
func (s *Server) resolveAlias(ref string) (string, error) {
	alias := strings.ToLower(strings.TrimSpace(ref))
	if !claudeAliases[alias] {
		return ref, nil
	}
	cfg := s.app.Config()
	var best, bestProvider string
	for name, p := range cfg.Providers {
		for m := range p.Models {
			if m == alias {
				return name + "/" + m, nil
			}
			if !strings.Contains(strings.ToLower(m), alias) {
				continue
			}
			anth, bestAnth := name == "anthropic", bestProvider == "anthropic"
			switch {
			case best == "", anth && !bestAnth:
			case anth == bestAnth && name+"/"+m > bestProvider+"/"+best:
			default:
				continue
			}
			best, bestProvider = m, name
		}
	}
	if best == "" {
		return "", fmt.Errorf("model alias %q: no configured model's name contains it; add one under providers.<name>.models in the config, or pass provider/model", ref)
	}
	return bestProvider + "/" + best, nil
}

// LaunchOptions are the options of a client's launch as dialect read it
// (Claude Code's argv or qwen's).
func LaunchOptions(d dialect.Dialect, l dialect.Launch) Options {
	return Options{ClaudeCode: d == dialect.ClaudeCode, Qwen: d == dialect.Qwen, MaxTurns: l.MaxTurns,
		AllowedTools: l.AllowedTools, DisallowedTools: l.DisallowedTools, Tools: l.Tools,
		AppendSystemPrompt: l.AppendSystemPrompt, SystemPrompt: l.SystemPrompt, Resume: l.Resume, SessionID: l.SessionID,
		ForkSession: l.ForkSession, PartialMessages: l.PartialMessages, MaxBudgetUSD: l.MaxBudgetUSD,
		MaxSessionTurns: l.MaxSessionTurns, MaxToolCalls: l.MaxToolCalls, ApprovalMode: l.PermissionMode,
		LaunchInit: LaunchInit{DisallowedTools: l.FromInit.DisallowedTools, MCPServers: l.FromInit.MCPServers}}
}
