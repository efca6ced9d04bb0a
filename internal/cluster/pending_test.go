package cluster

import (
	"encoding/json"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestResolveTextRoundTrips: a resolution sent as a control request
// comes back as it was given, an unedited approval with no edited input.
func TestResolveTextRoundTrips(t *testing.T) {
	for _, r := range []agent.Response{
		{Approval: &tool.Approval{Allow: true, RememberScope: "session"}},
		{Approval: &tool.Approval{Allow: true, UpdatedInput: json.RawMessage(`{"path":"b.txt"}`)}},
		{Approval: &tool.Approval{Message: "not now"}},
		{Answer: &tool.Answer{Text: "eu"}},
		{Answer: &tool.Answer{Declined: true}},
	} {
		id, got, err := ParseResolve(ResolveText("int-7", r))
		if err != nil || id != "int-7" {
			t.Fatalf("ParseResolve: %q %v", id, err)
		}
		want, _ := json.Marshal(r)
		have, _ := json.Marshal(got)
		if string(want) != string(have) {
			t.Fatalf("round trip: got %s, want %s", have, want)
		}
		if got.Approval != nil && r.Approval.UpdatedInput == nil && got.Approval.UpdatedInput != nil {
			t.Fatalf("an unedited approval came back edited: %q", got.Approval.UpdatedInput)
		}
	}
	if _, _, err := ParseResolve(`{"response":{}}`); err == nil {
		t.Fatal("a resolution without an id was accepted")
	}
}
