package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/project"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// projectFiles is what a workspace's own files give an App: read once
// when the App (or a view of it) is made, and not changed after.
type projectFiles struct {
	k *project.Knowledge
	// hooks are the settings files' command hooks, per event.
	hooks map[hook.Event][]hook.Matcher
}

// loadProject reads ws's project files (package project) and makes
// their hooks, confined by the sandbox sb gives when the config says
// sandbox.hooks; what was skipped or cut is in problems, for Warnings.
// The hooks get the settings' env.
func loadProject(ws string, cfg *config.Config, sources []string, sb func() *sandbox.Sandbox) (projectFiles, []string) {
	k := project.Load(project.Options{Workspace: ws, UserDir: cfg.UserDir(), Home: cfg.Home(), Sources: sources})
	var problems []string
	for _, p := range k.Problems {
		problems = append(problems, "project files: "+p.Error())
	}
	if !cfg.Sandbox.Hooks {
		sb = nil
	}
	set, errs := hook.FromSettings(k.Hooks, hook.CommandOptions{Dir: k.Root, Env: k.EnvList(), Sandbox: sb})
	for _, err := range errs {
		problems = append(problems, "project files: "+err.Error())
	}
	return projectFiles{k: k, hooks: set}, problems
}

// projectRules are the permission rules the project files add: the
// settings files' rules and the reading of the skills' folders.
func (p projectFiles) projectRules() []permission.Rule {
	return append(append([]permission.Rule(nil), p.k.Rules...), p.k.SkillReadRules()...)
}

// Project is what the workspace's own files say (instructions, skills,
// commands, settings).
func (a *App) Project() *project.Knowledge { return a.project.k }

// StandingPrompt is the system prompt of a session offering tools: the
// standing instructions, then the project's (instruction files, nested
// files, skills).
func (a *App) StandingPrompt(tools []string) string {
	return SystemPrompt(a.Workspace, tools) + a.project.k.Prompt()
}

// SkillsAndCommands lists the project's skills and custom commands as
// slash commands: name and description.
func (a *App) SkillsAndCommands() []SlashCommand {
	var out []SlashCommand
	for _, c := range a.project.k.Commands {
		out = append(out, SlashCommand{Name: c.Name, Description: c.Description, ArgHint: c.ArgHint, Kind: "command"})
	}
	for _, s := range a.project.k.Skills {
		out = append(out, SlashCommand{Name: s.Name, Description: s.Description, Kind: "skill"})
	}
	return out
}

// SlashCommand is a project command or skill offered as "/name".
type SlashCommand struct {
	Name, Description, ArgHint string
	Kind                       string // command or skill
}

// ExpandSlash turns "/name args" into the prompt it stands for: a
// custom command's text with its arguments, or a request to use the
// skill; ok is false when name is neither.
func (a *App) ExpandSlash(name, args string) (string, bool) {
	if c, ok := a.project.k.Command(name); ok {
		return c.Expand(args), true
	}
	if s, ok := a.project.k.Skill(name); ok {
		text := fmt.Sprintf("Use the skill %q (call the skill tool with name %q) for this task.", s.Name, s.Name)
		if args != "" {
			text += " Arguments: " + args
		}
		return text, true
	}
	return "", false
}

// sessionHooks is the runner of the project's hooks for session id; nil
// when the project declares none.
func (a *App) sessionHooks(id string) *hook.Runner {
	if len(a.project.hooks) == 0 {
		return nil
	}
	r := &hook.Runner{Secrets: a.Secrets, Base: func(in *hook.Input) {
		in.SessionID, in.Cwd = id, a.Workspace
		in.PermissionMode = claudeCodeMode(a.Permissions.Mode())
		in.TranscriptPath = a.TranscriptPath(id)
	}}
	r.Set(a.project.hooks)
	return r
}

// hooked wraps t in the project's PreToolUse, PostToolUse and
// PostToolUseFailure hooks.
func hooked(t tool.Tool, r *hook.Runner) tool.Tool {
	if r == nil || !r.Has(hook.PreToolUse) && !r.Has(hook.PostToolUse) && !r.Has(hook.PostToolUseFailure) {
		return t
	}
	return &hook.Tool{Tool: t, Hooks: r}
}

// claudeCodeMode is Claude Code's name of a permission mode, as hooks
// read it.
func claudeCodeMode(m permission.Mode) string {
	switch m {
	case permission.ModeAutoEdit:
		return "acceptEdits"
	case permission.ModeTrust:
		return "bypassPermissions"
	case permission.ModeDontAsk:
		return "dontAsk"
	}
	return string(m)
}

// ExpandGoal is goal, or, when it is "/name args" naming a project
// command or skill, what that stands for (arbor run "/review main.go").
func (a *App) ExpandGoal(goal string) string {
	name, args, ok := SplitSlash(goal)
	if !ok {
		return goal
	}
	if text, ok := a.ExpandSlash(name, args); ok {
		return text
	}
	return goal
}

// SplitSlash splits a prompt "/name args" into the command's name and its
// arguments; ok is false when the prompt names no command (no leading
// slash, or a path such as "/etc/hosts is wrong").
func SplitSlash(text string) (name, args string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), "/")
	if !ok || rest == "" {
		return "", "", false
	}
	name, args, _ = strings.Cut(rest, " ")
	return name, strings.TrimSpace(args), !strings.ContainsAny(name, "/\n")
}

// turnHooks runs a session's hooks at the loop's points
// (agent.TurnHooks): the project's Stop (SubagentStop for a tree's child
// node); and a client's then the project's PreCompact, and SessionStart
// with source "compact" after a compaction of a session's own
// conversation (not a sub-agent's), as Claude Code runs them. (A client
// runs its own Stop callbacks: streamjson's stopHooks.)
type turnHooks struct {
	r       *hook.Runner // the project's, nil when it declares none
	compact hook.Chain   // the client's, then the project's
	stop    hook.Event
	start   bool // SessionStart may run after a compaction
	report  func(notes ...string)
	say     func(e hook.Event, msgs []string) // SayHooks of the session
}

// newTurnHooks is nil when neither the project (r) nor a client has a
// hook for those points; a client's hooks (which it may set later) are
// looked up when a point comes.
func (a *App) newTurnHooks(id string, r, client *hook.Runner, nodeID int64) agent.TurnHooks {
	stop, start := hook.Stop, true
	if nodeID > 1 { // the root is node #1; the others are sub-agents
		stop, start = hook.SubagentStop, false
	}
	if client == nil && (r == nil || !r.Has(stop) && !r.Has(hook.PreCompact) && !(start && r.Has(hook.SessionStart))) {
		return nil
	}
	return turnHooks{r: r, compact: hook.Chain{client, r}, stop: stop, start: start, report: a.warn,
		say: func(e hook.Event, msgs []string) { a.SayHooks(id, e, msgs) }}
}

// Stopping implements agent.TurnHooks: a hook's block is feedback for
// the model; a failed hook is no verdict (its note is dropped with it).
func (h turnHooks) Stopping(ctx context.Context, s agent.StopCheck) string {
	if h.r == nil || !h.r.Has(h.stop) {
		return ""
	}
	v, err := h.r.Run(ctx, h.stop, "", hook.Input{StopHookActive: &s.Active, LastAssistantMessage: &s.Last})
	h.report(v.Notes...)
	h.say(h.stop, v.Messages)
	if err != nil || !v.Block || v.Stop {
		return ""
	}
	return hook.OrNoReason(v.Reason)
}

// Compacting implements agent.TurnHooks: the PreCompact hooks, told the
// trigger and the person's instructions, as Claude Code tells them. A
// hook that blocks (exit 2, decision "block") refuses the compaction, as
// Claude Code's does, and the refusal says so as Claude Code's: "Compaction
// blocked by PreCompact hook: [its command]: its reason". A hook that
// fails refuses nothing.
func (h turnHooks) Compacting(ctx context.Context, c agent.Compaction) string {
	if !h.compact.Has(hook.PreCompact) {
		return ""
	}
	in := hook.Input{Trigger: c.Trigger}
	if c.Instructions != "" {
		in.CustomInstructions = &c.Instructions
	}
	v, err := h.compact.Run(ctx, hook.PreCompact, c.Trigger, in)
	h.report(v.Notes...)
	h.say(hook.PreCompact, v.Messages)
	if err != nil || !v.Block {
		return ""
	}
	return fmt.Sprintf("Compaction blocked by PreCompact hook: [%s]: %s", v.BlockedBy, hook.OrNoReason(v.Reason))
}

// Compacted implements agent.TurnHooks: the SessionStart hooks, source
// "compact", told the model as Claude Code tells them; their context is
// kept after the summary, and what they say is shown to the person. A
// failed hook is reported and adds nothing.
func (h turnHooks) Compacted(ctx context.Context, c agent.Compaction) string {
	if !h.start || !h.compact.Has(hook.SessionStart) {
		return ""
	}
	v, err := h.compact.Run(ctx, hook.SessionStart, "compact", hook.Input{Source: "compact", Model: c.Model})
	if err != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("the SessionStart hook failed: %v", err))
	}
	h.report(v.Notes...)
	h.say(hook.SessionStart, v.Messages)
	if err != nil {
		return ""
	}
	return v.Context
}

// sessionEndBudget is how long a session's SessionEnd hooks may take
// together, as Claude Code's default (its
// CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS sets another): they run as the
// process ends, and must not hold its exit.
const sessionEndBudget = 1500 * time.Millisecond

// EndSession runs the project's SessionEnd hooks for session id with
// reason (Claude Code's: "other" when the process ends with the session).
// They are told only; what they report goes to stderr. They get
// sessionEndBudget, or CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS, and are
// stopped after it, ctx's cancellation aside (an interrupted run's
// session ends too).
func (a *App) EndSession(ctx context.Context, id, reason string) {
	a.EndSessionWith(ctx, id, reason, nil)
}

// EndSessionWith is EndSession with a client's SessionEnd hooks (the
// Claude Agent SDK's callbacks) run first, within the same budget; client
// may be nil.
func (a *App) EndSessionWith(ctx context.Context, id, reason string, client *hook.Runner) {
	r := hook.Chain{client, a.sessionHooks(id)}
	if !r.Has(hook.SessionEnd) {
		return
	}
	budget := sessionEndBudget
	if ms, err := strconv.Atoi(a.getenv("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS")); err == nil && ms > 0 {
		budget = time.Duration(ms) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	v, err := r.Run(ctx, hook.SessionEnd, reason, hook.Input{Reason: reason})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		v.Notes = append(v.Notes, fmt.Sprintf("the SessionEnd hooks were stopped after %s (CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS gives them longer)", budget))
	case err != nil:
		v.Notes = append(v.Notes, fmt.Sprintf("the SessionEnd hook failed: %v", err))
	}
	a.warn(v.Notes...)
	a.SayHooks("", hook.SessionEnd, v.Messages) // on stderr: the session is over
}

// PromptHooks runs the project's hooks for a prompt of session id
// (PromptContext) and returns the prompt with their context before it.
func (a *App) PromptHooks(ctx context.Context, id, source, prompt string) (string, error) {
	extra, err := a.PromptContext(ctx, id, source, prompt)
	if err != nil {
		return "", err
	}
	if extra == "" {
		return prompt, nil
	}
	if prompt == "" {
		return extra, nil
	}
	return extra + "\n\n" + prompt, nil
}

// PromptContext runs the project's hooks for a prompt of session id: its
// SessionStart hooks first when source ("startup", "resume") is given,
// then its UserPromptSubmit hooks. A block refuses the prompt (an error
// with the hook's reason). It returns what the hooks add for the model,
// their context and their own reports, "" when they add nothing; the
// prompt itself stays as the person wrote it.
func (a *App) PromptContext(ctx context.Context, id, source, prompt string) (string, error) {
	r := a.sessionHooks(id)
	if r == nil {
		return "", nil
	}
	var parts []string
	if source != "" && r.Has(hook.SessionStart) {
		v, err := r.Run(ctx, hook.SessionStart, source, hook.Input{Source: source})
		if err != nil {
			return "", fmt.Errorf("the SessionStart hook failed: %w", err)
		}
		parts = append(parts, v.Context, reports(v.Notes))
		a.SayHooks(id, hook.SessionStart, v.Messages)
	}
	if r.Has(hook.UserPromptSubmit) {
		v, err := r.Run(ctx, hook.UserPromptSubmit, "", hook.Input{Prompt: &prompt})
		a.SayHooks(id, hook.UserPromptSubmit, v.Messages) // a blocking hook's too
		switch {
		case err != nil:
			return "", fmt.Errorf("the UserPromptSubmit hook failed, so the prompt was not run: %w", err)
		case v.Block || v.Stop:
			return "", fmt.Errorf("a UserPromptSubmit hook blocked the prompt: %s", hook.OrNoReason(v.Reason))
		}
		parts = append(parts, v.Context, reports(v.Notes))
	}
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	// What a hook prints reaches the model and the transcript: the
	// runner redacted the configuration's secrets from it.
	return strings.Join(out, "\n\n"), nil
}

// reports is the hooks' own problems as a line, "" when there are none.
func reports(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "(hook report: " + strings.Join(notes, "; ") + ")"
}

// notifyHooks runs the project's Notification hooks whenever an agent
// waits on a person (an approval, a question), on a bus subscription of
// its own; Close cancels a running hook and ends the subscription.
func (a *App) notifyHooks() {
	ms := a.project.hooks[hook.Notification]
	if len(ms) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	sub := a.Bus.Subscribe(func(e agent.Event) {
		ir, ok := e.(*agent.InteractionRequested)
		if !ok {
			return
		}
		msg := "arbor needs your attention"
		switch in := ir.Interaction; {
		case in.Approval != nil:
			msg = "arbor needs your permission to use " + in.Approval.Tool
		case in.Question != nil:
			msg = "arbor asks: " + in.Question.Question
		}
		if r := a.sessionHooks(ir.Interaction.SessionID); r != nil {
			v, _ := r.Run(ctx, hook.Notification, "", hook.Input{Message: msg})
			a.warn(v.Notes...)
			a.SayHooks(ir.Interaction.SessionID, hook.Notification, v.Messages)
		}
	})
	a.onClose(func() { cancel(); sub.Close() })
}

// warn writes each of msgs to Options.Diag as a warning: a title that
// could not be stored, and the notes of hooks whose event has no turn to
// show them to (Stop, PreCompact, Notification). A hook's stderr is in
// those and Diag is a log: the runner redacted the configuration's
// secrets from them.
func (a *App) warn(msgs ...string) {
	root := a.rootApp()
	if root.diag == nil || len(msgs) == 0 {
		return
	}
	root.diagMu.Lock()
	defer root.diagMu.Unlock()
	for _, n := range msgs {
		fmt.Fprintln(root.diag, "arbor: warning:", n)
	}
}

// warnOnce says msg on Options.Diag, once per process.
func (a *App) warnOnce(msg string) {
	root := a.rootApp()
	root.diagMu.Lock()
	defer root.diagMu.Unlock()
	if root.warnedOnce == nil {
		root.warnedOnce = map[string]bool{}
	}
	if root.warnedOnce[msg] || root.diag == nil {
		return
	}
	root.warnedOnce[msg] = true
	fmt.Fprintln(root.diag, "arbor: warning:", msg)
}

// rootApp is the App a view made by In belongs to, or a itself: what it
// holds for the whole process (diag, the hooks' transcripts) is the
// root's.
func (a *App) rootApp() *App {
	if a.root != nil {
		return a.root
	}
	return a
}
