package store

import (
	"errors"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// TestStepResolved: Resolved fills in the ids every dialect writes (the
// session from Create, the usage's session in a copy, leaving the
// caller's record as it was) and refuses what every dialect refuses
// (the conformance suite runs each refusal through both).
func TestStepResolved(t *testing.T) {
	u := &UsageRecord{Model: "m"}
	st, err := Step{Create: &Session{ID: "s1"}, Usage: u, Messages: []llm.Message{llm.UserText("hi")}}.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	if st.SessionID != "s1" || st.Usage.SessionID != "s1" || u.SessionID != "" {
		t.Fatalf("resolved %q, usage of %q, the caller's usage of %q", st.SessionID, st.Usage.SessionID, u.SessionID)
	}
	for name, bad := range map[string]Step{
		"status":          {SessionID: "s1", Status: "sleeping"},
		"create of other": {SessionID: "s1", Create: &Session{ID: "s2"}},
		"usage of other":  {SessionID: "s1", Usage: &UsageRecord{SessionID: "s2"}},
		"negative usage":  {SessionID: "s1", Usage: &UsageRecord{Usage: llm.Usage{OutputTokens: -1}}},
		"message role":    {SessionID: "s1", Messages: []llm.Message{{Role: "system"}}},
	} {
		if _, err := bad.Resolved(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
