package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/tool"
)

// Errors of the interaction broker.
var (
	// ErrUnknownInteraction: no pending interaction has that id (it never
	// existed, or it was already resolved: a stale id).
	ErrUnknownInteraction = errors.New("unknown or already resolved interaction")
	// ErrWrongResponse: the response does not fit the interaction's kind.
	ErrWrongResponse = errors.New("response does not match the interaction kind")
)

// InteractionKind says what an interaction waits for.
type InteractionKind string

const (
	KindApproval InteractionKind = "approval"
	KindQuestion InteractionKind = "question"
)

// Interaction is something waiting on a person or client.
type Interaction struct {
	ID        string                `json:"id"`
	Kind      InteractionKind       `json:"kind"`
	SessionID string                `json:"session_id"`
	Approval  *tool.ApprovalRequest `json:"approval,omitempty"`
	Question  *tool.Question        `json:"question,omitempty"`
	Created   time.Time             `json:"created"`
	// Deadline is zero when the interaction waits forever.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Response resolves an interaction: Approval for KindApproval, Answer for
// KindQuestion.
type Response struct {
	Approval *tool.Approval `json:"approval,omitempty"`
	Answer   *tool.Answer   `json:"answer,omitempty"`
}

type pending struct {
	in   Interaction
	done chan Response
}

// Broker holds every pending interaction of a process under one id space.
// Any front end may resolve any interaction; stale or unknown ids are
// rejected without side effects.
type Broker struct {
	bus *Bus

	mu sync.Mutex // guards the fields below
	// timeouts, when positive, give interactions of a kind a deadline; on
	// expiry an approval is denied and a question declined.
	timeouts map[InteractionKind]time.Duration
	pending  map[string]*pending
	counter  int
}

// SetTimeout gives the interactions of kind opened from now on a deadline
// d after they open (0: none).
func (b *Broker) SetTimeout(kind InteractionKind, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timeouts[kind] = d
}

// NewBroker returns a broker publishing on bus.
func NewBroker(bus *Bus) *Broker {
	return &Broker{bus: bus, pending: map[string]*pending{}, timeouts: map[InteractionKind]time.Duration{}}
}

// For returns the broker as seen by one session's tools: it implements
// tool.Approver and tool.Asker.
func (b *Broker) For(sessionID string) *SessionBroker {
	return &SessionBroker{b: b, session: sessionID}
}

// Pending lists the pending interactions, oldest first.
func (b *Broker) Pending() []Interaction {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Interaction, 0, len(b.pending))
	for _, p := range b.pending {
		out = append(out, p.in)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Created.Before(out[j].Created) || (out[i].Created.Equal(out[j].Created) && out[i].ID < out[j].ID)
	})
	return out
}

// Resolve answers interaction id. It fails with ErrUnknownInteraction for
// an unknown or stale id and with ErrWrongResponse when r does not fit;
// either way nothing changes.
func (b *Broker) Resolve(id string, r Response) error {
	b.mu.Lock()
	p, ok := b.pending[id]
	if !ok {
		b.mu.Unlock()
		return fmt.Errorf("resolve %q: %w", id, ErrUnknownInteraction)
	}
	if (p.in.Kind == KindApproval && r.Approval == nil) || (p.in.Kind == KindQuestion && r.Answer == nil) {
		b.mu.Unlock()
		return fmt.Errorf("resolve %q (%s): %w", id, p.in.Kind, ErrWrongResponse)
	}
	delete(b.pending, id)
	b.mu.Unlock()
	b.bus.Publish(&InteractionResolved{Meta: Meta{SessionID: p.in.SessionID}, ID: id, Kind: p.in.Kind, Resolution: "answered", Response: r})
	p.done <- r
	return nil
}

// wait registers in, publishes it and blocks until it is resolved, times
// out or ctx ends.
func (b *Broker) wait(ctx context.Context, in Interaction, onTimeout Response) (Response, error) {
	b.mu.Lock()
	b.counter++
	in.ID = "req_" + strconv.Itoa(b.counter)
	in.Created = time.Now()
	if d := b.timeouts[in.Kind]; d > 0 {
		in.Deadline = in.Created.Add(d)
	}
	p := &pending{in: in, done: make(chan Response, 1)}
	b.pending[in.ID] = p
	b.mu.Unlock()

	b.bus.Publish(&InteractionRequested{Meta: Meta{SessionID: in.SessionID}, Interaction: in})

	var expire <-chan time.Time
	if !in.Deadline.IsZero() {
		t := time.NewTimer(time.Until(in.Deadline))
		defer t.Stop()
		expire = t.C
	}
	select {
	case r := <-p.done:
		return r, nil
	case <-expire:
		if b.withdraw(in.ID) {
			b.bus.Publish(&InteractionResolved{Meta: Meta{SessionID: in.SessionID}, ID: in.ID, Kind: in.Kind, Resolution: "timeout", Response: onTimeout})
			return onTimeout, nil
		}
		return <-p.done, nil // resolved in the same instant
	case <-ctx.Done():
		if b.withdraw(in.ID) {
			b.bus.Publish(&InteractionResolved{Meta: Meta{SessionID: in.SessionID}, ID: in.ID, Kind: in.Kind, Resolution: endedBy(ctx)})
			return Response{}, ctx.Err()
		}
		return <-p.done, nil
	}
}

// endedBy names how ctx ended an interaction: "cancelled" when someone
// stopped the work (a plain cancel, or a cause that is a context.Canceled,
// such as a person stopping a tree node), "error" when it ended because
// something failed (a time limit, a failed run: any other cause).
func endedBy(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return "cancelled"
	}
	return "error"
}

// withdraw removes id if it is still pending and reports whether it was.
func (b *Broker) withdraw(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.pending[id]; !ok {
		return false
	}
	delete(b.pending, id)
	return true
}

// SessionBroker is a Broker bound to one session.
type SessionBroker struct {
	b       *Broker
	session string
}

// Approve implements tool.Approver.
func (s *SessionBroker) Approve(ctx context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	deny := Response{Approval: &tool.Approval{Message: "no answer before the deadline"}}
	r, err := s.b.wait(ctx, Interaction{Kind: KindApproval, SessionID: s.session, Approval: &req}, deny)
	if err != nil {
		return tool.Approval{}, err
	}
	return *r.Approval, nil
}

// Ask implements tool.Asker.
func (s *SessionBroker) Ask(ctx context.Context, q tool.Question) (tool.Answer, error) {
	declined := Response{Answer: &tool.Answer{Declined: true}}
	r, err := s.b.wait(ctx, Interaction{Kind: KindQuestion, SessionID: s.session, Question: &q}, declined)
	if err != nil {
		return tool.Answer{}, err
	}
	return *r.Answer, nil
}
