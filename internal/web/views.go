package web

import (
	"context"
	"errors"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// The JSON the API returns; the pages render the same values.

// RunSummary is one row of the runs list.
type RunSummary struct {
	ID        string          `json:"id"`
	Goal      string          `json:"goal"`
	Status    store.RunStatus `json:"status"`
	Model     string          `json:"model"`
	BudgetUSD float64         `json:"budget_usd,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	// Owner is the process driving the run, if one is alive.
	Owner *store.Owner `json:"owner,omitempty"`
	// Here is true when this server's process drives the run (steering
	// works); false when another process or nobody does.
	Here bool `json:"here"`
}

// NodeInfo is one node of a run's tree.
type NodeInfo struct {
	ID        int64           `json:"id"`
	ParentID  int64           `json:"parent_id"`
	Kind      store.NodeKind  `json:"kind"`
	Goal      string          `json:"goal"`
	State     store.NodeState `json:"state"`
	BlockedBy []int64         `json:"blocked_by,omitempty"`
	Question  string          `json:"question,omitempty"`
	Options   []string        `json:"options,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	// Model is the node's model; "" for the run's. Runner is "agent"
	// for nodes run by arbor's agent loop, "person" for asks.
	Model      string     `json:"model,omitempty"`
	Runner     string     `json:"runner"`
	SessionID  string     `json:"session_id,omitempty"`
	Usage      llm.Usage  `json:"usage"`
	CostUSD    float64    `json:"cost_usd"`
	CostKnown  bool       `json:"cost_known"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	ElapsedSec float64    `json:"elapsed_s"`
}

// RunDetail is a run with its tree and what waits on a person.
type RunDetail struct {
	RunSummary
	Result    string        `json:"result,omitempty"`
	Error     string        `json:"error,omitempty"`
	MaxTokens int64         `json:"max_tokens,omitempty"`
	CostUSD   float64       `json:"cost_usd"`
	CostKnown bool          `json:"cost_known"`
	Tokens    int64         `json:"tokens"`
	Elapsed   float64       `json:"elapsed_s"`
	Nodes     []NodeInfo    `json:"nodes"`
	Pending   []Interaction `json:"pending"`
}

// NodeDetail is a node with its transcript.
type NodeDetail struct {
	NodeInfo
	Prompt     string                `json:"prompt"`
	Context    string                `json:"context"`
	Transcript []store.MessageRecord `json:"transcript"`
	// Intents are the node's tool calls with their results as recorded
	// before and after each ran.
	Intents []store.Intent `json:"intents"`
	Pending []Interaction  `json:"pending"`
}

// summary reads r's owner and shows a run left "running" by a dead
// process as interrupted, as `arbor runs` does, an interrupted run that a
// live owner just took up as running, and a headless session's run that
// no process holds as idle.
func (s *Server) summary(ctx context.Context, r store.Run) RunSummary {
	sum := RunSummary{ID: r.ID, Goal: r.Goal, Status: r.Status, Model: r.Model, BudgetUSD: r.BudgetUSD,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Here: s.o.Steer != nil && s.o.Steer.Drives(r.ID)}
	l, err := s.o.Store.GetLease(ctx, store.RunLeaseKey(r.ID))
	alive := err == nil && !l.Dead(time.Now())
	if alive {
		sum.Owner = &l.Owner
	}
	switch {
	case r.Status == store.RunRunning && (errors.Is(err, store.ErrNotFound) || err == nil && !alive):
		sum.Status = store.RunInterrupted
	case r.Status == store.RunInterrupted && (alive || sum.Here):
		// Resumed a moment ago: its owner writes running as it starts.
		sum.Status = store.RunRunning
	}
	if sum.Status == store.RunInterrupted && store.Hosted(ctx, s.o.Store, r.ID) {
		sum.Status = store.RunIdle // a conversation no process holds (store.ShownStatus)
	}
	return sum
}

func (s *Server) listRuns(ctx context.Context, limit int) ([]RunSummary, error) {
	rs, err := s.o.Store.ListRuns(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]RunSummary, len(rs))
	for i, r := range rs {
		out[i] = s.summary(ctx, r)
	}
	return out, nil
}

func (s *Server) nodeInfo(ctx context.Context, n store.Node, now time.Time) NodeInfo {
	ni := NodeInfo{ID: n.ID, ParentID: n.ParentID, Kind: n.Kind, Goal: n.Goal, State: n.State,
		BlockedBy: n.BlockedBy, Question: n.Question, Options: n.Options, Result: n.Result, Error: n.Error,
		Model: n.Model, Runner: "agent", SessionID: n.SessionID, StartedAt: n.StartedAt, EndedAt: n.EndedAt, CostKnown: true}
	if n.Kind == store.KindAsk {
		ni.Runner = "person"
	}
	if n.StartedAt != nil {
		end := now
		if n.EndedAt != nil {
			end = *n.EndedAt
		}
		ni.ElapsedSec = end.Sub(*n.StartedAt).Seconds()
	}
	if n.SessionID != "" {
		if ss, err := s.o.Store.GetSession(ctx, n.SessionID); err == nil {
			ni.Usage, ni.CostUSD, ni.CostKnown = ss.Usage, ss.CostUSD, ss.CostKnown
		}
	}
	return ni
}

func (s *Server) runDetail(ctx context.Context, id string) (RunDetail, error) {
	r, err := s.o.Store.GetRun(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	nodes, err := s.o.Store.Nodes(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	now := time.Now()
	d := RunDetail{RunSummary: s.summary(ctx, r), Result: r.Result, Error: r.Error, MaxTokens: r.MaxTokens,
		CostKnown: true, Nodes: make([]NodeInfo, len(nodes)), Pending: []Interaction{}}
	end := now
	if d.Status != store.RunRunning {
		end = r.UpdatedAt
	}
	d.Elapsed = end.Sub(r.CreatedAt).Seconds()
	sessions := map[string]bool{}
	for i, n := range nodes {
		d.Nodes[i] = s.nodeInfo(ctx, n, now)
		d.CostUSD += d.Nodes[i].CostUSD
		d.CostKnown = d.CostKnown && d.Nodes[i].CostKnown
		d.Tokens += d.Nodes[i].Usage.Total()
		if n.SessionID != "" {
			sessions[n.SessionID] = true
		}
	}
	pending, err := s.pending(ctx, id)
	if err != nil {
		return RunDetail{}, err
	}
	for _, in := range pending {
		if in.SessionID == id || sessions[in.SessionID] {
			d.Pending = append(d.Pending, interaction(in))
		}
	}
	return d, nil
}

func (s *Server) nodeDetail(ctx context.Context, runID string, id int64) (NodeDetail, error) {
	n, err := s.o.Store.GetNode(ctx, runID, id)
	if err != nil {
		return NodeDetail{}, err
	}
	d := NodeDetail{NodeInfo: s.nodeInfo(ctx, n, time.Now()), Prompt: n.Prompt, Context: n.Context,
		Transcript: []store.MessageRecord{}, Intents: []store.Intent{}, Pending: []Interaction{}}
	if n.SessionID != "" {
		if d.Transcript, err = s.o.Store.Messages(ctx, n.SessionID, 0); err != nil {
			return NodeDetail{}, err
		}
		if d.Intents, err = s.o.Store.Intents(ctx, n.SessionID); err != nil {
			return NodeDetail{}, err
		}
	}
	pending, err := s.pending(ctx, runID)
	if err != nil {
		return NodeDetail{}, err
	}
	for _, in := range pending {
		if n.SessionID != "" && in.SessionID == n.SessionID {
			d.Pending = append(d.Pending, interaction(in))
		}
	}
	return d, nil
}

// pending are the interactions waiting in the process that drives run
// id (this one's without a Steerer).
func (s *Server) pending(ctx context.Context, id string) ([]agent.Interaction, error) {
	if s.o.Steer != nil {
		return s.o.Steer.Pending(ctx, id)
	}
	return s.o.Interactions.Pending(), nil
}
