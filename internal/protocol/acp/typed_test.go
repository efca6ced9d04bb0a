package acp

import "testing"

// TestPromptTyped: a prompt's title comes from what the person typed: its
// text and its @-mentions by name, never an attached file's content.
func TestPromptTyped(t *testing.T) {
	t.Parallel()
	blocks := []contentBlock{
		{Type: "text", Text: "Review "},
		{Type: "resource_link", Name: "main.go", URI: "file:///ws/main.go"},
		{Type: "text", Text: " for bugs"},
		{Type: "resource", Resource: &resource{URI: "file:///ws/notes.md", Text: "SECRET NOTES"}},
		{Type: "image"},
	}
	if got := promptTyped(blocks); got != "Review main.go for bugs" {
		t.Fatalf("promptTyped = %q; want %q", got, "Review main.go for bugs")
	}
	if got := promptTyped(blocks[3:]); got != "" {
		t.Fatalf("promptTyped of attachments alone = %q; want none", got)
	}
}
