package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// TestCapImages: past the limit, the oldest images give way to a note,
// a user's and a tool result's alike, and the request given is not
// changed.
func TestCapImages(t *testing.T) {
	t.Parallel()
	img := llm.Image{MediaType: "image/png", Data: "AAAA"}
	req := &llm.Request{Messages: []llm.Message{
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("look"), llm.ImagePart(img)}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("ok")}},
		{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c", Content: "shots", Images: []llm.Image{img, img, img}}}}},
		{Role: llm.RoleUser, Parts: []llm.Part{llm.ImagePart(img)}},
	}}
	before, _ := json.Marshal(req)
	if got := llm.CapImages(req, 5); got != req {
		t.Fatal("a request within the limit was copied")
	}
	got := llm.CapImages(req, 2)
	after, _ := json.Marshal(req)
	if string(before) != string(after) {
		t.Fatal("CapImages changed the request it was given")
	}
	m := got.Messages
	if m[0].Parts[1].Type != llm.PartText || !strings.Contains(m[0].Parts[1].Text, "an image was left out here: the provider takes at most 2 images") {
		t.Fatalf("the oldest image: %+v", m[0].Parts[1])
	}
	res := m[2].Parts[0].ToolResult
	if len(res.Images) != 1 || res.Content != "shots\n"+llm.ImagesLeftOut(2, 2) {
		t.Fatalf("the tool result: %q with %d images", res.Content, len(res.Images))
	}
	if m[3].Parts[0].Type != llm.PartImage {
		t.Fatalf("the newest image was left out: %+v", m[3])
	}
}
