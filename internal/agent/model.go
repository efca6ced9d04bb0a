// The model: which one the steps use, what it is sent, and the streaming
// call that asks it.

package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
)

// modelState is the model an agent's steps use.
type modelState struct {
	provider llm.Provider
	name     string // the provider's model name
	ref      string // the name shown to people
	price    *llm.Price
	window   int64
}

// SetModel switches the provider and model for later steps; a step
// already under way finishes on the model it started with. It may be
// called from any goroutine, also while Send runs.
func (a *Agent) SetModel(p llm.Provider, model, ref string, price *llm.Price, window int64) {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	if window <= 0 {
		window = a.model.window
	}
	a.model = modelState{provider: p, name: model, ref: ref, price: price, window: window}
}

// SetSystem replaces the system prompt from the next model request; a
// request under way keeps the prompt it was sent with. It may be called
// from any goroutine, also while Send runs.
func (a *Agent) SetSystem(system string) {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	a.system = system
}

// System is the system prompt of the next model request.
func (a *Agent) System() string {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	return a.system
}

// currentModel is the model for the next step.
func (a *Agent) currentModel() modelState {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	return a.model
}

// call makes one streaming model call, publishing deltas as they arrive.
func (a *Agent) call(ctx context.Context, m modelState) (*llm.Response, error) {
	// A provider refuses a request with more tools than it takes: the
	// sources' last tools are left out, and the caller told.
	limit := llm.LimitsOf(m.provider).MaxTools
	tools, left := a.cfg.Tools.SpecsUpTo(limit)
	if key := strings.Join(left, " "); key != a.leftOut {
		a.leftOut = key
		if len(left) > 0 && a.cfg.ToolsLeftOut != nil {
			a.cfg.ToolsLeftOut(m.ref, limit, left)
		}
	}
	req := &llm.Request{
		Model:     m.name,
		System:    a.System(),
		Messages:  a.contextMessages(),
		Tools:     tools,
		MaxTokens: a.cfg.MaxTokens,
	}
	var resp *llm.Response
	for ev, err := range m.provider.Stream(WithSession(ctx, a.cfg.SessionID), req) {
		if err != nil {
			return nil, fmt.Errorf("model call to %s: %w", m.ref, err)
		}
		switch ev := ev.(type) {
		case llm.TextDelta:
			a.publish(&TextDelta{Text: ev.Text})
		case llm.ThinkingDelta:
			a.publish(&ThinkingDelta{Text: ev.Text})
		case llm.ToolCallBegin:
			a.publish(&ToolInputStarted{Index: ev.Index, CallID: ev.ID, Tool: ev.Name})
		case llm.ToolCallDelta:
			a.publish(&ToolInputDelta{Index: ev.Index, JSON: ev.JSON})
		case llm.ToolCallEnd:
			a.publish(&ToolInputFinished{Index: ev.Index})
		case llm.Done:
			resp = ev.Response
		}
	}
	if resp == nil {
		return nil, fmt.Errorf("model call to %s: %w", m.ref, llm.ErrNoResponse)
	}
	a.normalizeCalls(&resp.Message)
	return resp, nil
}

// normalizeCalls gives every tool call a session-unique id and valid JSON
// input, so the stored transcript can always be sent back to a provider.
func (a *Agent) normalizeCalls(m *llm.Message) {
	parts := make([]llm.Part, len(m.Parts))
	copy(parts, m.Parts)
	m.Parts = parts
	for i, p := range m.Parts {
		if p.Type != llm.PartToolCall || p.ToolCall == nil {
			continue
		}
		c := *p.ToolCall
		if c.ID == "" || a.callIDs[c.ID] {
			base := c.ID
			if base == "" {
				base = "call"
			}
			for n := len(a.callIDs) + 1; ; n++ {
				if id := fmt.Sprintf("%s_%d", base, n); !a.callIDs[id] {
					c.ID = id
					break
				}
			}
		}
		a.callIDs[c.ID] = true
		if len(c.Input) == 0 || !json.Valid(c.Input) {
			c.Input = json.RawMessage(`{}`)
		}
		m.Parts[i].ToolCall = &c
	}
}

// contextMessages is what the model is sent: the summary of compacted
// turns, if any, folded into the first kept user message, then the rest.
func (a *Agent) contextMessages() []llm.Message {
	out := make([]llm.Message, 0, len(a.history)+1)
	for _, e := range a.history {
		out = append(out, e.msg)
	}
	if a.summary != "" {
		note := llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(summaryPreamble + a.summary)}}
		out = append([]llm.Message{note}, out...)
	}
	return mergeRoles(out)
}

// mergeRoles joins consecutive messages of one role (a turn ended by a tool
// leaves tool results that the next user message follows), since providers
// expect roles to alternate. The store keeps them apart.
func mergeRoles(msgs []llm.Message) []llm.Message {
	out := msgs[:0:0]
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			merged := out[n-1]
			merged.Parts = append(append([]llm.Part(nil), merged.Parts...), m.Parts...)
			out[n-1] = merged
			continue
		}
		out = append(out, m)
	}
	return out
}

const summaryPreamble = "[Earlier turns of this conversation were compacted. Summary:]\n"
