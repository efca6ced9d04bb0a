package streamjson

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// turn runs one user message; it is a runner job, and ctx is cancelled by
// an interrupt.
func (s *Server) turn(ctx context.Context, t userTurn) {
	start := time.Now()
	s.mu.Lock()
	initErr := s.initErr
	s.mu.Unlock()
	if initErr != nil {
		s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true,
			Errors: []string{initErr.Error()}, SessionID: s.sessionID(), PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
		return
	}
	// An interrupt that comes while the session is being made ends the
	// turn below, as an interrupted turn; the session itself is made (the
	// client is told its id, and the next turn uses it).
	sess, err := s.session(context.WithoutCancel(ctx))
	// A Claude Agent SDK client cannot answer auth_required (it says the
	// subtype is unsupported): the error result names what to set instead.
	if err != nil && !s.sdkLaunch() && needsAuth(err) {
		if s.authenticate(ctx) {
			sess, err = s.session(ctx)
		}
	}
	if err != nil && s.sdkLaunch() && needsAuth(err) {
		s.loginFailure(err, start)
		return
	}
	if err != nil {
		s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true,
			Errors: []string{err.Error()}, SessionID: s.sessionID(), DurationMS: time.Since(start).Milliseconds(),
			PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
		return
	}
	if name, ok := s.renameCommand(t.text); ok && !t.cont {
		s.renameTurn(ctx, sess, name, start)
		return
	}
	instructions, compact := s.compactCommand(t.text)
	compact = compact && !t.cont
	if !compact { // a compaction's init follows its status (compact.go)
		s.write(s.initMessage(sess.ID))
	}
	if s.turnRefused(t, sess.ID, start) {
		return
	}
	if compact {
		s.compactTurn(ctx, sess, instructions, start)
		return
	}

	var text string
	if !t.cont { // a continuation sends no prompt
		text, err = s.promptHooks(ctx, sess, t.text)
	}
	if err == nil && len(t.images) > 0 && sess.Model.Ref.NoImages {
		err = fmt.Errorf("the message holds %d image(s), but the model %s takes no images (its config says images: false); it was not sent", len(t.images), sess.Model.Ref.Ref)
	}
	if err != nil {
		s.events.Flush() // what the hooks said, before the result
		s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true,
			Errors: []string{err.Error()}, SessionID: sess.ID, DurationMS: time.Since(start).Milliseconds(),
			PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
		return
	}
	before, _, _ := sess.Agent.Usage()
	s.apiTime.Store(0)
	s.mu.Lock()
	s.denials, s.lastStop = nil, ""
	if s.modelUsage == nil {
		s.modelUsage = map[string]modelUsage{}
	}
	s.calls, s.failed = 0, map[string]string{}
	s.mu.Unlock()
	var res agent.Result
	if t.cont {
		res = sess.Agent.Continue(ctx)
	} else {
		s.app.NameConversation(ctx, sess, t.text)
		msg := llm.UserText(text)
		for _, img := range t.images {
			msg.Parts = append(msg.Parts, llm.ImagePart(img))
		}
		// A compaction in the turn runs the SessionStart hooks, whose
		// lines are written as at the start.
		res = sess.Agent.Send(hook.WithWatch(tool.WithEnv(ctx, t.env), s.hookLines(sess.ID)), msg)
	}
	res = s.stopHooks(ctx, sess, res)
	if res.Outcome == agent.OutcomeFailed && errors.Is(context.Cause(ctx), errInterrupted) {
		// An interrupt that came as the turn began can fail a step's
		// store write with the cancelled context: it is the interrupt.
		res.Outcome = agent.OutcomeCancelled
	}
	s.events.Flush()
	s.writePending()

	after, cost, _ := sess.Agent.Usage()
	s.mu.Lock()
	denials := append([]permissionDenial{}, s.denials...)
	// As Claude Code's, modelUsage adds up the session's turns (in this
	// process).
	mu := make(map[string]modelUsage, len(s.modelUsage))
	maps.Copy(mu, s.modelUsage)
	lastStop := s.lastStop
	s.mu.Unlock()
	u := usageDelta(before, after)
	r := resultMessage{
		Type: "result", Subtype: "success", Result: res.Text, SessionID: sess.ID,
		DurationMS: time.Since(start).Milliseconds(), DurationAPIMS: time.Duration(s.apiTime.Load()).Milliseconds(),
		NumTurns: res.Steps, Usage: u, TotalCostUSD: cost, PermissionDenials: denials, ModelUsage: mu, UUID: newUUID(),
	}
	switch res.Outcome {
	case agent.OutcomeCompleted:
		r.StopReason = json.RawMessage(`"end_turn"`)
		if errs := s.allCallsFailed(denials); errs != nil {
			// Not a clean success: the result says what failed. Claude
			// Code's and qwen's result is not an error then (the model
			// saw the failures and answered), so under their argv only
			// errors says so: is_error would make the SDK throw. A spec
			// client gets an error result; never success with is_error.
			r.Errors = errs
			if !s.sdkLaunch() {
				r.Subtype, r.IsError = "error_during_execution", true
			}
		}
	case agent.OutcomeMaxTurns:
		r.Subtype, r.IsError, r.Errors = "error_max_turns", true, []string{fmt.Sprintf("Reached maximum number of turns (%d)", res.Steps)}
	case agent.OutcomeCancelled:
		if errors.Is(res.Err, errBudget) {
			r.Subtype, r.IsError, r.Errors = "error_max_budget_usd", true, []string{res.Err.Error()}
			break
		}
		var tb errToolBudget
		if errors.As(context.Cause(ctx), &tb) {
			r.Subtype, r.IsError, r.Errors = "error_during_execution", true, []string{tb.Error()}
			break
		}
		var hs hook.Stopped
		if errors.As(context.Cause(ctx), &hs) {
			r.Subtype, r.IsError, r.Errors = "error_during_execution", true, []string{hs.Error()}
			break
		}
		// As Claude Code does, the transcript the client sees says so.
		note := interruptedNote
		if errors.Is(context.Cause(ctx), errDeniedInterrupt) {
			note = "[Request interrupted by user for tool use]"
		}
		s.writeInterrupted(sess.ID, note)
		r.Subtype, r.IsError, r.Errors = "error_during_execution", true, []string{note}
		if lastStop != "" {
			r.StopReason, _ = json.Marshal(lastStop)
		}
	default:
		msg := string(res.Outcome)
		if res.Err != nil {
			msg = res.Err.Error()
		}
		r.Subtype, r.IsError, r.Errors = "error_during_execution", true, []string{msg}
		if errors.Is(res.Err, errBudget) {
			r.Subtype = "error_max_budget_usd"
		}
	}
	s.endTurn(res.Outcome == agent.OutcomeCancelled)
	s.write(r)
}

// interruptedNote is the user line of a turn a person interrupted, as
// Claude Code writes it into the transcript the client sees.
const interruptedNote = "[Request interrupted by user]"

// writeInterrupted writes the user line that says a turn was
// interrupted (note: interruptedNote, or its variant for a denied tool).
func (s *Server) writeInterrupted(sid, note string) {
	s.write(messageLine{Type: "user", SessionID: sid, UUID: newUUID(), Message: apiMessage{Role: "user",
		Content: []apiBlock{{Type: "text", Text: note}}}})
}

// modeName is the permission mode as the client names it: Claude Code's
// names under Claude Code's argv, arbor's otherwise.
func (s *Server) modeName() string {
	if s.opts.Qwen {
		return s.qwenMode()
	}
	if s.opts.ClaudeCode {
		return claudeMode(s.app.Permissions.Mode())
	}
	return string(s.app.Permissions.Mode())
}

// claudeMode is Claude Code's name for a permission mode.
func claudeMode(m permission.Mode) string {
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

func usageDelta(before, after llm.Usage) apiUsage {
	return apiUsage{
		InputTokens: after.InputTokens - before.InputTokens, OutputTokens: after.OutputTokens - before.OutputTokens,
		CacheReadInputTokens:     after.CacheReadTokens - before.CacheReadTokens,
		CacheCreationInputTokens: after.CacheWriteTokens - before.CacheWriteTokens,
	}
}

func (s *Server) initMessage(sessionID string) initMessage {
	sess := s.current()
	m := initMessage{Type: "system", Subtype: "init", SessionID: sessionID, Cwd: s.app.Workspace, Tools: []string{},
		PermissionMode: s.modeName(), APIKeySource: "environment", MCPServers: s.initMCPServers(), SlashCommands: []string{},
		Skills: []string{}, OutputStyle: "default", SandboxEnabled: s.app.SandboxStatus() == "on", UUID: newUUID()}
	for _, c := range s.slashCommands() {
		m.SlashCommands = append(m.SlashCommands, c.Name)
	}
	for _, c := range s.app.SkillsAndCommands() {
		if c.Kind == "skill" {
			m.Skills = append(m.Skills, c.Name)
		}
	}
	if sess != nil {
		m.Model = s.modelName(sess.Model.Ref.Ref)
		m.Tools = sess.Tools.Names()
		if s.opts.ClaudeCode {
			m.APIKeySource = "none"
			if sess.Model.Provider != nil && strings.HasPrefix(sess.Model.Ref.Ref, "anthropic/") {
				m.APIKeySource = "ANTHROPIC_API_KEY"
			}
		}
	}
	return m
}

// keySource is the account's apiKeySource: Claude Code's values under its
// argv (the SDK's ApiKeySource type), arbor's "environment" otherwise.
func (s *Server) keySource() string {
	if s.sdkLaunch() {
		return "ANTHROPIC_API_KEY"
	}
	return "environment"
}

// modelName is a model as the client names it: Claude Code names models
// without a provider prefix; cosh clients get arbor's provider/model.
func (s *Server) modelName(ref string) string {
	if s.sdkLaunch() {
		if _, name, ok := strings.Cut(ref, "/"); ok {
			return name
		}
	}
	return ref
}

// writePending writes the assistant line held for its usage, if any.
func (s *Server) writePending() {
	s.mu.Lock()
	p := s.pending
	s.pending = nil
	s.mu.Unlock()
	if p != nil {
		s.write(*p)
	}
}

// translate is the bus subscriber: it turns the session's agent events
// into protocol lines.
func (s *Server) translate(e agent.Event) {
	sess := s.current()
	if sess == nil {
		return
	}
	if r, ok := e.(*agent.InteractionRequested); ok && r.Interaction.SessionID == sess.ID {
		s.request(r.Interaction)
		return
	}
	if r, ok := e.(*agent.InteractionResolved); ok {
		s.withdraw(r.ID)
		return
	}
	if agent.MetaOf(e).SessionID != sess.ID {
		return
	}
	sid := sess.ID
	if u, ok := e.(*agent.UsageUpdated); ok {
		s.usage(u)
		return
	}
	s.writePending()
	if s.compactionEvent(sid, e) {
		return
	}
	if s.sdkLaunch() {
		if s.opts.PartialMessages {
			for _, r := range s.raw.events(e, s.modelName(sess.Model.Ref.Ref)) {
				if s.opts.Qwen && r.Type == "message_delta" {
					continue // qwen sends none; its SDK's StreamEvent has none
				}
				s.write(rawStreamEvent{Type: "stream_event", Event: r, SessionID: sid, UUID: newUUID()})
			}
		}
		switch e.(type) {
		case *agent.TextDelta, *agent.ThinkingDelta, *agent.ToolInputStarted, *agent.ToolInputDelta, *agent.ToolInputFinished:
			return
		}
	}
	switch e := e.(type) {
	case *agent.StepStarted:
		s.stepStart.Store(e.At.UnixNano())
	case *agent.TextDelta:
		s.partial(sid, streamDelta{Subtype: "text_delta", Content: e.Text})
	case *agent.ThinkingDelta:
		s.partial(sid, streamDelta{Subtype: "thinking_delta", Content: e.Text})
	case *agent.ToolInputStarted:
		s.partial(sid, streamDelta{Subtype: "tool_use_begin", ToolName: e.Tool, ToolUseID: e.CallID})
	case *agent.ToolInputDelta:
		s.partial(sid, streamDelta{Subtype: "tool_use_delta", Content: e.JSON})
	case *agent.ToolInputFinished:
		s.partial(sid, streamDelta{Subtype: "tool_use_end"})
	case *agent.AssistantMessage:
		s.apiTime.Add(e.At.UnixNano() - s.stepStart.Load())
		m := apiAssistant(e)
		m.Model = s.modelName(m.Model)
		if s.opts.ClaudeCode {
			// As Claude Code writes them (TestClaudeCodeGoldens).
			m.StopReason, m.StopSequence = json.RawMessage("null"), json.RawMessage("null")
		}
		if s.opts.Qwen && e.StopReason != llm.StopToolUse {
			// As qwen writes them (TestQwenGoldens): tool_use, else null.
			m.StopReason = json.RawMessage("null")
		}
		// Held until the usage of its call, published next, is known.
		s.mu.Lock()
		s.lastStop = string(e.StopReason)
		s.pending = &messageLine{Type: "assistant", Message: m, SessionID: sid, UUID: newUUID()}
		s.mu.Unlock()
	case *agent.ToolCallFinished:
		s.mu.Lock()
		if s.failed != nil {
			s.calls++
			if e.IsError {
				s.failed[e.CallID] = e.Tool + ": " + clip(e.Result, 300)
			}
		}
		s.mu.Unlock()
		s.write(messageLine{Type: "user", SessionID: sid, UUID: newUUID(), Message: apiMessage{Role: "user",
			Content: []apiBlock{{Type: "tool_result", ToolUseID: e.CallID, Content: e.Result, IsError: &e.IsError}}}})
		if len(e.Blocked) > 0 {
			s.write(systemMessage{Type: "system", Subtype: "sandbox_blocked", SessionID: sid, UUID: newUUID(), ToolUseID: e.CallID, Blocked: e.Blocked})
		}
	case *agent.HookMessage:
		s.write(informationalMessage{Type: "system", Subtype: "informational", Content: e.Text, Level: e.Level, UUID: newUUID(), SessionID: sid})
	}
}

// usage fills the held assistant line's usage and adds the call to the
// turn's modelUsage.
func (s *Server) usage(u *agent.UsageUpdated) {
	au := apiUsage{InputTokens: u.Call.InputTokens, OutputTokens: u.Call.OutputTokens,
		CacheReadInputTokens: u.Call.CacheReadTokens, CacheCreationInputTokens: u.Call.CacheWriteTokens}
	name := s.modelName(u.Model)
	s.mu.Lock()
	s.contextTokens = u.Call.InputTokens + u.Call.CacheReadTokens + u.Call.CacheWriteTokens + u.Call.OutputTokens
	if s.pending != nil {
		s.pending.Message.Usage = &au
	}
	if s.modelUsage != nil {
		mu := s.modelUsage[name]
		mu.InputTokens += au.InputTokens
		mu.OutputTokens += au.OutputTokens
		mu.CacheReadInputTokens += au.CacheReadInputTokens
		mu.CacheCreationInputTokens += au.CacheCreationInputTokens
		mu.CostUSD += u.CallCost
		if sess := s.sess; sess != nil {
			mu.ContextWindow, mu.MaxOutputTokens = int64(sess.Model.Ref.ContextWindow), int64(sess.Model.Ref.MaxOutput)
		}
		s.modelUsage[name] = mu
	}
	s.mu.Unlock()
	s.writePending()
}

func (s *Server) partial(sid string, d streamDelta) {
	if !s.opts.PartialMessages {
		return
	}
	s.write(streamEvent{Type: "stream_event", Event: d, SessionID: sid, UUID: newUUID()})
}

func apiAssistant(e *agent.AssistantMessage) apiMessage {
	m := apiMessage{ID: e.ResponseID, Type: "message", Role: "assistant", Model: e.Model, Content: []apiBlock{}}
	if m.ID == "" {
		m.ID = "msg_" + strings.ReplaceAll(newUUID(), "-", "")
	}
	m.StopReason, _ = json.Marshal(string(e.StopReason))
	for _, p := range e.Message.Parts {
		switch p.Type {
		case llm.PartText:
			if p.Text != "" {
				m.Content = append(m.Content, apiBlock{Type: "text", Text: p.Text})
			}
		case llm.PartThinking:
			m.Content = append(m.Content, apiBlock{Type: "thinking", Thinking: p.Text, Signature: p.Signature})
		case llm.PartToolCall:
			m.Content = append(m.Content, apiBlock{Type: "tool_use", ID: p.ToolCall.ID, Name: p.ToolCall.Name, Input: p.ToolCall.Input})
		}
	}
	return m
}

// allCallsFailed returns the errors of the running turn's tool calls when
// it made some and every one failed (calls refused by the client or a
// hook, listed in permission_denials, aside); nil otherwise.
func (s *Server) allCallsFailed(denials []permissionDenial) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	denied := map[string]bool{}
	for _, d := range denials {
		denied[d.ToolUseID] = true
	}
	var errs []string
	calls := s.calls
	for id, e := range s.failed {
		if denied[id] {
			calls--
			continue
		}
		errs = append(errs, "tool call failed: "+e)
	}
	if calls <= 0 || len(errs) != calls {
		return nil
	}
	sort.Strings(errs)
	return errs
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
