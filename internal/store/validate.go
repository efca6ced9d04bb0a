package store

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
)

// ErrInvalid reports a record a dialect refuses to write: a required field
// is empty or a value is outside its closed set. Dialects wrap it with %w,
// so every dialect rejects exactly the same records.
var ErrInvalid = errors.New("invalid record")

// Validate reports whether s can be created. An empty Status is allowed:
// dialects store it as SessionActive.
func (s Session) Validate() error {
	if s.ID == "" {
		return fmt.Errorf("%w: session id is empty", ErrInvalid)
	}
	if s.Status != "" && !s.Status.Valid() {
		return fmt.Errorf("%w: unknown session status %q", ErrInvalid, s.Status)
	}
	if s.NodeID < 0 || (s.RunID == "") != (s.NodeID == 0) {
		return fmt.Errorf("%w: session %s is owned by run %q node %d: give both or neither", ErrInvalid, s.ID, s.RunID, s.NodeID)
	}
	return nil
}

// ValidateMessage reports whether m can be appended: its role is one of
// llm's roles and every part's payload matches its type.
func ValidateMessage(m llm.Message) error {
	if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
		return fmt.Errorf("%w: unknown message role %q", ErrInvalid, m.Role)
	}
	for i, p := range m.Parts {
		switch p.Type {
		case llm.PartText, llm.PartThinking:
		case llm.PartToolCall:
			if p.ToolCall == nil {
				return fmt.Errorf("%w: part %d is a tool call without a call", ErrInvalid, i)
			}
		case llm.PartToolResult:
			if p.ToolResult == nil {
				return fmt.Errorf("%w: part %d is a tool result without a result", ErrInvalid, i)
			}
		case llm.PartImage:
			if p.Image == nil {
				return fmt.Errorf("%w: part %d is an image without an image", ErrInvalid, i)
			}
		default:
			return fmt.Errorf("%w: part %d has unknown type %q", ErrInvalid, i, p.Type)
		}
	}
	return nil
}

// Resolved checks st as every dialect writes it and returns it with its
// ids filled in: SessionID from Create when empty, and Usage a copy with
// the step's SessionID when its own is empty. ErrInvalid for an unknown
// status, a Create or Usage of another session, invalid usage or an
// invalid message. The session to create is the dialect's to check, as
// it encodes it.
func (st Step) Resolved() (Step, error) {
	if st.Status != "" && !st.Status.Valid() {
		return st, fmt.Errorf("%w: unknown session status %q", ErrInvalid, st.Status)
	}
	if st.Create != nil {
		if st.SessionID == "" {
			st.SessionID = st.Create.ID
		}
		if st.Create.ID != st.SessionID {
			return st, fmt.Errorf("%w: creating session %s in a step of session %s", ErrInvalid, st.Create.ID, st.SessionID)
		}
	}
	if st.Usage != nil {
		u := *st.Usage
		if u.SessionID == "" {
			u.SessionID = st.SessionID
		}
		if u.SessionID != st.SessionID {
			return st, fmt.Errorf("%w: usage of session %s in a step of session %s", ErrInvalid, u.SessionID, st.SessionID)
		}
		if err := u.Validate(); err != nil {
			return st, err
		}
		st.Usage = &u
	}
	for i, m := range st.Messages {
		if err := ValidateMessage(m); err != nil {
			return st, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return st, nil
}

// Validate reports whether in can be started. Status, Result, IsError,
// EndedAt and PGID are ignored: a dialect always records a new intent as started.
func (in Intent) Validate() error {
	switch {
	case in.SessionID == "":
		return fmt.Errorf("%w: intent session id is empty", ErrInvalid)
	case in.CallID == "":
		return fmt.Errorf("%w: intent call id is empty", ErrInvalid)
	case in.Tool == "":
		return fmt.Errorf("%w: intent tool is empty", ErrInvalid)
	}
	return nil
}

// Validate reports whether u can be recorded.
func (u UsageRecord) Validate() error {
	if u.SessionID == "" {
		return fmt.Errorf("%w: usage session id is empty", ErrInvalid)
	}
	n := u.Usage
	if n.InputTokens < 0 || n.OutputTokens < 0 || n.CacheReadTokens < 0 || n.CacheWriteTokens < 0 || u.CostUSD < 0 {
		return fmt.Errorf("%w: usage has a negative count or cost", ErrInvalid)
	}
	if math.IsNaN(u.CostUSD) || math.IsInf(u.CostUSD, 0) {
		return fmt.Errorf("%w: usage cost is not a finite number", ErrInvalid)
	}
	return nil
}

// Validate reports whether c can be saved. Dialects additionally check that
// UpToSeq does not pass the session's last message.
func (c Compaction) Validate() error {
	if c.SessionID == "" {
		return fmt.Errorf("%w: compaction session id is empty", ErrInvalid)
	}
	if c.UpToSeq < 1 {
		return fmt.Errorf("%w: compaction up_to_seq %d is below 1", ErrInvalid, c.UpToSeq)
	}
	return nil
}

// Validate reports whether r can be written (CreateRun first turns an
// empty Status into RunRunning).
func (r Run) Validate() error {
	switch {
	case r.ID == "":
		return fmt.Errorf("%w: run id is empty", ErrInvalid)
	case !r.Status.Valid():
		return fmt.Errorf("%w: unknown run status %q", ErrInvalid, r.Status)
	case math.IsNaN(r.BudgetUSD) || math.IsInf(r.BudgetUSD, 0) || r.BudgetUSD < 0:
		return fmt.Errorf("%w: run budget %v is not a finite amount >= 0", ErrInvalid, r.BudgetUSD)
	case r.MaxTokens < 0 || r.MaxParallel < 0 || r.NodeTimeout < 0:
		return fmt.Errorf("%w: run has a negative token limit, parallelism or node timeout", ErrInvalid)
	case r.TraceParent != "" && !ValidTraceParent(r.TraceParent):
		return fmt.Errorf("%w: run trace parent %q is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)", ErrInvalid, r.TraceParent)
	}
	return nil
}

// ValidTraceParent reports whether s is a W3C traceparent of version 00
// with a trace id and a span id that are not all zero.
func ValidTraceParent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	zero := func(h string) bool { return strings.Trim(h, "0") == "" }
	for _, part := range []string{s[3:35], s[36:52], s[53:]} {
		if strings.Trim(part, "0123456789abcdef") != "" {
			return false
		}
	}
	return !zero(s[3:35]) && !zero(s[36:52])
}

// Validate reports whether n can be written. The state is the engine's
// business and is not checked.
func (n Node) Validate() error {
	switch {
	case n.RunID == "":
		return fmt.Errorf("%w: node run id is empty", ErrInvalid)
	case n.ID < 1:
		return fmt.Errorf("%w: node id %d is below 1", ErrInvalid, n.ID)
	case n.ParentID < 0 || n.ParentID == n.ID:
		return fmt.Errorf("%w: node %d has parent %d", ErrInvalid, n.ID, n.ParentID)
	case !n.Kind.Valid():
		return fmt.Errorf("%w: unknown node kind %q", ErrInvalid, n.Kind)
	case n.Attempts < 0 || n.Synthesized < 0:
		return fmt.Errorf("%w: node %d has a negative attempt or synthesis count", ErrInvalid, n.ID)
	case math.IsNaN(n.BudgetUSD) || math.IsInf(n.BudgetUSD, 0) || n.BudgetUSD < 0 || n.MaxTokens < 0:
		return fmt.Errorf("%w: node %d has a budget that is not a finite amount >= 0", ErrInvalid, n.ID)
	}
	for _, dep := range n.BlockedBy {
		if dep < 1 {
			return fmt.Errorf("%w: node %d is blocked by node id %d", ErrInvalid, n.ID, dep)
		}
	}
	return nil
}

// NodesOf reports whether nodes may be created with run runID
// (CreateRun): each must be of that run. Each node's own validity is the
// commit's to check, as for any write of nodes.
func NodesOf(runID string, nodes []Node) error {
	for _, n := range nodes {
		if n.RunID != runID {
			return fmt.Errorf("%w: node %d belongs to run %q, not %q", ErrInvalid, n.ID, n.RunID, runID)
		}
	}
	return nil
}
