package owner

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Remote turns (tree.Remote). A run's owner that hands node turns to a
// cluster's node workers registers each in its Turns; the worker running
// one reaches the owner over TCP (ServeTCP) with requests that name the
// turn and carry the endpoint's token: the turn's spec and first prompt,
// its gate and charge before and after each model call, its tree tool
// calls and flushes, its approvals and questions (raised on the owner's
// broker, so every front end of the run sees them), its agent events,
// and finally its end. A request for a turn that is not registered (it
// ended, or was cancelled and handed out again) fails with ErrStaleTurn
// and changes nothing.

// The remote turn kinds.
const (
	// KindTurn returns the turn's spec (Reply.Turn).
	KindTurn Kind = "turn"
	// KindPrompt makes the node's first message (Reply.Content).
	KindPrompt Kind = "prompt"
	// KindGate passes the budgets' gate before a model call with the
	// call's estimate (Usage, Cost); it may wait for room.
	KindGate Kind = "gate"
	// KindCharge charges a model call's Usage and Cost.
	KindCharge Kind = "charge"
	// KindFlush writes the nodes the turn's tree tools created.
	KindFlush Kind = "flush"
	// KindDraft recovers the result complete stored before a crash
	// (Answer).
	KindDraft Kind = "draft"
	// KindInteract raises Interaction (an approval or a question of the
	// turn's agent) on the owner's broker and replies with its
	// resolution once a person or a front end gave it.
	KindInteract Kind = "interact"
	// KindEvents publishes the turn's agent Events on the owner's bus.
	KindEvents Kind = "events"
	// KindTurnEnd ends the turn with End.
	KindTurnEnd Kind = "turn_end"
	// KindPing says whether the turn is still open here: the worker
	// running it pings while it runs, and ends it when the owner is gone
	// or refuses the turn.
	KindPing Kind = "ping"
)

// ErrStaleTurn: the request names a turn the owner does not have (it
// ended, or it was cancelled and handed out again).
var ErrStaleTurn = errors.New("the turn is not open on this owner")

// TurnSpec is what a remote worker needs to build the turn's agent.
type TurnSpec struct {
	Session      string      `json:"session"`
	Model        string      `json:"model,omitempty"`
	Title        string      `json:"title"`
	System       string      `json:"system,omitempty"`
	Fresh        bool        `json:"fresh,omitempty"`
	Notice       string      `json:"notice,omitempty"`
	HasDraft     bool        `json:"has_draft,omitempty"`
	ContextQuery bool        `json:"context_query,omitempty"`
	Tools        []tool.Info `json:"tools"`
	// Prompt is the node's first message, made with the spec when the
	// turn is the node's first (Fresh): it saves the worker a request.
	Prompt string `json:"prompt,omitempty"`
}

// TurnEnd is how a remote turn ended: agent.Result on the wire, its error
// coded like a reply's so that errors.Is finds the engine's sentinels
// (budgets, retryable model failures) on the owner's side.
type TurnEnd struct {
	Outcome     agent.Outcome `json:"outcome"`
	Text        string        `json:"text,omitempty"`
	Steps       int           `json:"steps,omitempty"`
	EndedByTool bool          `json:"ended_by_tool,omitempty"`
	Error       string        `json:"error,omitempty"`
	Code        Code          `json:"code,omitempty"`
}

// EndOf is res on the wire.
func EndOf(res agent.Result) TurnEnd {
	e := TurnEnd{Outcome: res.Outcome, Text: res.Text, Steps: res.Steps, EndedByTool: res.EndedByTool}
	if res.Err != nil {
		f := failure(res.Err)
		e.Error, e.Code = f.Error, f.Code
	}
	return e
}

// Result is the agent.Result e carries.
func (e TurnEnd) Result() agent.Result {
	res := agent.Result{Outcome: e.Outcome, Text: e.Text, Steps: e.Steps, EndedByTool: e.EndedByTool}
	if e.Error != "" || e.Code != "" {
		res.Err = &RemoteError{Code: e.Code, Message: e.Error}
	}
	return res
}

// Turns are the turns an owner has handed out, by turn id; safe for
// concurrent use.
type Turns struct {
	mu sync.Mutex
	m  map[string]*Turn
}

// Turn is one turn handed out: its engine side (tree.RemoteTurn) and
// where its end arrives.
type Turn struct {
	ID   string
	Turn tree.RemoteTurn
	end  chan TurnEnd // buffered: the first end is kept
}

// Add registers turn t under id until remove is called; Ended delivers
// its end.
func (ts *Turns) Add(id string, t tree.RemoteTurn) (turn *Turn, remove func()) {
	turn = &Turn{ID: id, Turn: t, end: make(chan TurnEnd, 1)}
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[string]*Turn{}
	}
	ts.m[id] = turn
	ts.mu.Unlock()
	return turn, func() {
		ts.mu.Lock()
		if ts.m[id] == turn {
			delete(ts.m, id)
		}
		ts.mu.Unlock()
	}
}

// Ended receives the turn's end, once.
func (t *Turn) Ended() <-chan TurnEnd { return t.end }

func (ts *Turns) get(id string) (*Turn, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.m[id]
	if t == nil {
		return nil, fmt.Errorf("turn %q: %w", id, ErrStaleTurn)
	}
	return t, nil
}

// authorized reports whether req may be served on a connection that
// needs token ("" for the unix socket, which only its user reaches).
func authorized(req Request, token string) bool {
	return token == "" || subtle.ConstantTimeCompare([]byte(req.Token), []byte(token)) == 1
}

// turnKind reports whether k is a request of a remote turn.
func turnKind(k Kind) bool {
	switch k {
	case KindTurn, KindPrompt, KindGate, KindCharge, KindFlush, KindDraft, KindInteract, KindEvents, KindTurnEnd, KindPing:
		return true
	}
	return false
}

// doTurn carries out a remote turn's request; ctx ends when the client
// goes away.
func (s *server) doTurn(ctx context.Context, req Request) Reply {
	if s.o.Turns == nil {
		return failure(fmt.Errorf("turn %q: this owner hands out no turns: %w", req.Turn, ErrStaleTurn))
	}
	t, err := s.o.Turns.get(req.Turn)
	if err != nil {
		return failure(err)
	}
	spec, in := t.Turn.Spec, t.Turn.Input
	switch req.Kind {
	case KindPing:
		return Reply{OK: true}
	case KindTurn:
		ts := &TurnSpec{Session: spec.SessionID, Model: spec.Model, Title: spec.Title, System: spec.System,
			Fresh: spec.Fresh, Notice: in.Notice, HasDraft: in.HasDraft, ContextQuery: in.ContextQuery}
		for _, tt := range spec.Tools {
			ts.Tools = append(ts.Tools, tt.Info())
		}
		if spec.Fresh && !in.ContextQuery {
			p, err := in.Prompt(ctx)
			if err != nil {
				return failure(err)
			}
			ts.Prompt = p
		}
		return Reply{OK: true, Turn: ts}
	case KindPrompt:
		p, err := in.Prompt(ctx)
		if err != nil {
			return failure(err)
		}
		return Reply{OK: true, Content: p}
	case KindGate:
		if err := spec.Gate(ctx, req.usage(), req.Cost); err != nil {
			return failure(err)
		}
		return Reply{OK: true}
	case KindCharge:
		spec.Charge(req.usage(), req.Cost)
		return Reply{OK: true}
	case KindFlush:
		if spec.Flush != nil {
			if err := spec.Flush(ctx); err != nil {
				return failure(err)
			}
		}
		return Reply{OK: true}
	case KindDraft:
		in.RecoverDraft(req.Answer)
		return Reply{OK: true}
	case KindTool:
		return runTool(ctx, spec.Tools, spec.NodeID, req)
	case KindInteract:
		return s.interact(ctx, spec.SessionID, req)
	case KindEvents:
		for _, e := range req.Events {
			if v := e.Value(); v != nil {
				s.o.Bus.Publish(v)
			}
		}
		return Reply{OK: true}
	case KindTurnEnd:
		if req.End == nil {
			return failure(fmt.Errorf("%w: turn_end needs an end", ErrBadRequest))
		}
		select {
		case t.end <- *req.End:
		default: // ended already
		}
		return Reply{OK: true}
	}
	return failure(fmt.Errorf("%w %q", ErrUnknownKind, req.Kind))
}

// interact raises the interaction on the owner's broker for the turn's
// session and waits for its resolution.
func (s *server) interact(ctx context.Context, session string, req Request) Reply {
	if s.o.Broker == nil || req.Ask == nil {
		return failure(fmt.Errorf("%w: interact needs an interaction and an owner with a broker", ErrBadRequest))
	}
	b := s.o.Broker.For(session)
	switch in := req.Ask; {
	case in.Approval != nil:
		a, err := b.Approve(ctx, *in.Approval)
		if err != nil {
			return failure(err)
		}
		return Reply{OK: true, Resolution: resolution(agent.Response{Approval: &a})}
	case in.Question != nil:
		a, err := b.Ask(ctx, *in.Question)
		if err != nil {
			return failure(err)
		}
		return Reply{OK: true, Resolution: resolution(agent.Response{Answer: &a})}
	}
	return failure(fmt.Errorf("%w: the interaction has neither an approval nor a question", ErrBadRequest))
}

func (r Request) usage() llm.Usage {
	if r.Usage == nil {
		return llm.Usage{}
	}
	return *r.Usage
}
