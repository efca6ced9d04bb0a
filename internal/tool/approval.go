package tool

import (
	"context"
	"encoding/json"
	"errors"
)

// Approver asks whoever is in charge (a person at a terminal, a headless
// client) whether a call may run. The agent's interaction broker implements
// it.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// ApprovalRequest is one question "may this call run?".
type ApprovalRequest struct {
	CallID string
	Tool   string
	Kind   Kind
	Input  json.RawMessage
	Target Target
	// Reason says why approval is needed ("shell asks in default mode").
	Reason string
	// SuggestedRule is a rule pattern that would allow this call and ones
	// like it, offered to the user as "always allow".
	SuggestedRule string
}

// Approval is the answer.
type Approval struct {
	Allow bool
	// RememberScope, when set ("session", "project", "user"), saves a rule
	// allowing calls like this one in that scope.
	RememberScope string
	// RulePattern overrides the suggested rule when remembering, e.g.
	// "shell(git status*)".
	RulePattern string
	// UpdatedInput replaces the call's arguments when the approver edited
	// them; nil keeps the original.
	UpdatedInput json.RawMessage
	// Message is the reason given with a denial; the model sees it.
	Message string
}

// ErrNoApprover is returned by approvers that cannot ask anyone (stdin is
// not a terminal and --yes was not given).
var ErrNoApprover = errors.New("no one to ask for approval")
