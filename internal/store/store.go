// Package store is arbor's storage seam: the records the engine and the
// agent loop persist, the interface every database dialect implements
// (store/sqlite today, store/postgres later) and the errors they share.
// storetest holds the one conformance suite every dialect must pass.
//
// Invariants: messages are append-only and numbered per session from 1 in
// the order they were appended; an intent is written before its tool runs
// and finished at most once; every method is safe for concurrent use.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

// Sentinel errors; dialects wrap them with %w.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Session is one conversation of one agent.
type Session struct {
	ID        string        `json:"id"`
	Title     string        `json:"title"`
	Model     string        `json:"model"`
	Workspace string        `json:"workspace"`
	Status    SessionStatus `json:"status"`
	CreatedAt time.Time     `json:"created_at"`
	UpdatedAt time.Time     `json:"updated_at"`
	// Usage and CostUSD are totals over every model call of the session.
	// CostKnown is false when any call used a model without a price.
	Usage     llm.Usage `json:"usage"`
	CostUSD   float64   `json:"cost_usd"`
	CostKnown bool      `json:"cost_known"`
	// RunID and NodeID name the tree node whose agent this session is (a
	// sub-agent, a node of arbor run); both are empty for a conversation a
	// person or client opened, including the main agent of a hosted run.
	RunID  string `json:"run_id,omitempty"`
	NodeID int64  `json:"node_id,omitempty"`
}

// ConversationQuery selects a page of conversations (sessions no tree node
// owns), as an editor lists the sessions it may resume.
type ConversationQuery struct {
	// Workspace, when not "", keeps those held in it.
	Workspace string
	// AfterUpdated and AfterID, when AfterID is set, start the page after
	// that conversation (the last of the previous page): those written
	// to before it, or at the same time with a lesser id.
	AfterUpdated time.Time
	AfterID      string
	// Limit bounds the page; <= 0 means no bound.
	Limit int
}

// OwnedByNode reports whether s is the agent session of a tree node rather
// than a conversation to continue or resume.
func (s Session) OwnedByNode() bool { return s.NodeID != 0 }

// MessageRecord is one persisted message.
type MessageRecord struct {
	SessionID string      `json:"session_id"`
	Seq       int64       `json:"seq"`
	Message   llm.Message `json:"message"`
	CreatedAt time.Time   `json:"created_at"`
}

// Intent records that a tool call was about to run, and later its result.
type Intent struct {
	SessionID string          `json:"session_id"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Status    IntentStatus    `json:"status"`
	Result    string          `json:"result,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	StartedAt time.Time       `json:"started_at"`
	EndedAt   *time.Time      `json:"ended_at,omitempty"`
	// PGID is the process group the tool's process runs in, 0 when the
	// tool started none (or crashed before saying so). Resume kills a
	// started intent's group before reporting the call as interrupted.
	PGID int `json:"pgid,omitempty"`
}

// UsageRecord is the cost of one model call.
type UsageRecord struct {
	SessionID string    `json:"session_id"`
	Model     string    `json:"model"`
	Usage     llm.Usage `json:"usage"`
	CostUSD   float64   `json:"cost_usd"`
	CostKnown bool      `json:"cost_known"`
	At        time.Time `json:"at"`
}

// Step is what one step of an agent makes durable at once: messages to
// append, the usage of the model call that produced them, and the session's
// new status. Any part may be empty; SaveStep writes the parts present in
// one transaction, so a step costs one commit instead of three.
type Step struct {
	SessionID string
	// Create, when set, is a session to create first, in the same
	// transaction, as CreateSession creates it (ErrConflict when its id
	// is taken, ErrInvalid when it is not valid or not SessionID): a tree
	// node's session is stored with its first message, not on its own.
	Create   *Session
	Messages []llm.Message
	// Usage, when set, is recorded as AddUsage records it; its SessionID
	// may be left empty (it is the step's).
	Usage *UsageRecord
	// Status, when set, becomes the session's status.
	Status SessionStatus
}

// Compaction replaces messages 1..UpToSeq of a session in the model's
// context with Summary. The messages themselves stay in the store.
type Compaction struct {
	SessionID string    `json:"session_id"`
	UpToSeq   int64     `json:"up_to_seq"`
	Summary   string    `json:"summary"`
	CreatedAt time.Time `json:"created_at"`
}

// Store is what a database dialect implements. It is wider than the
// usual small interface on purpose: it is the one seam between arbor and its
// databases, and the conformance suite pins every method. Consumers declare
// the narrow interfaces they need.
type Store interface {
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, id string) (Session, error)
	// ListSessions returns sessions, newest first; limit <= 0 means all.
	ListSessions(ctx context.Context, limit int) ([]Session, error)
	// LatestConversation returns the conversation (a session no tree
	// node owns) held in workspace that was written to last (ties by id,
	// the greater first); ErrNotFound when there is none.
	LatestConversation(ctx context.Context, workspace string) (Session, error)
	// Conversations returns the conversations q asks for, the one
	// written to last first (ties by id, the greater first).
	Conversations(ctx context.Context, q ConversationQuery) ([]Session, error)
	SetSessionStatus(ctx context.Context, id string, status SessionStatus) error
	// TitleSession gives session id the title when it has none (its title
	// is empty): a conversation is named after its first prompt, and the
	// first title given stays. It does not count as a write to the
	// session (updated_at stays). ErrNotFound for an unknown session.
	TitleSession(ctx context.Context, id, title string) error
	// RenameSession sets session id's title, whatever it was ("" clears
	// it): a person's /rename. Like TitleSession it is not a write to the
	// session. ErrNotFound for an unknown session.
	RenameSession(ctx context.Context, id, title string) error

	// AppendMessages appends msgs in one transaction and returns the seq of
	// the last one.
	AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) (int64, error)
	// SaveStep writes a Step in one transaction and returns the seq of the
	// session's last message (the last appended one, if any). Nothing is
	// written when any part is invalid.
	SaveStep(ctx context.Context, st Step) (int64, error)
	// Messages returns the session's messages with seq > afterSeq in order.
	Messages(ctx context.Context, sessionID string, afterSeq int64) ([]MessageRecord, error)

	// StartIntent records that a call is about to run, with no result and
	// no process group. ErrConflict if the call id already has an intent.
	StartIntent(ctx context.Context, in Intent) error
	// FinishIntent stores the result. ErrNotFound if there is no started
	// intent for the call.
	FinishIntent(ctx context.Context, sessionID, callID, result string, isError bool) error
	// SetIntentPGID records the process group of a started intent's tool
	// process. ErrNotFound if the call has no intent, ErrConflict if it is
	// finished, ErrInvalid for a pgid < 1.
	SetIntentPGID(ctx context.Context, sessionID, callID string, pgid int) error
	Intents(ctx context.Context, sessionID string) ([]Intent, error)

	// AddUsage records one model call and adds it to the session totals in
	// the same transaction.
	AddUsage(ctx context.Context, u UsageRecord) error

	SaveCompaction(ctx context.Context, c Compaction) error
	// LatestCompaction returns ErrNotFound when the session has none.
	LatestCompaction(ctx context.Context, sessionID string) (Compaction, error)

	TreeStore
	LeaseStore

	Close() error
}
