package llmtest

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/llm"
)

func TestWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":               nil,
		"one":            {"one"},
		"a b  c":         {"a ", "b  ", "c"},
		"  lead\nnext ":  {"  ", "lead\n", "next "},
		"tab\tsep végé ": {"tab\t", "sep ", "végé "},
	} {
		got := words(in)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Fatalf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFragments(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":        nil,
		"{":       {"{"},
		"{}":      {"{", "}"},
		`{"a":1}`: {`{"a`, `":1`, `}`},
		"äöü":     {"ä", "ö", "ü"},
	} {
		got := fragments(in, 3)
		if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Fatalf("fragments(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzSplitting checks how the server cuts streamed text and tool inputs:
// for any UTF-8 text, words and fragments give back the text when joined,
// in non-empty UTF-8 pieces; a word piece is one word and the spaces after
// it; fragments(s, 3) gives at most 3 pieces, and at least 2 for 2 runes.
func FuzzSplitting(f *testing.F) {
	f.Add("Hello, brave new world")
	f.Add(`{"path":"ünï/cöde.txt","n":[1,2,3]}`)
	f.Add(" \t\n")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		ws := words(s)
		if strings.Join(ws, "") != s {
			t.Fatalf("words(%q) joins to %q", s, strings.Join(ws, ""))
		}
		if len(strings.Fields(s)) >= 2 && len(ws) < 2 {
			t.Fatalf("words(%q) gave %d pieces for several words", s, len(ws))
		}
		for i, w := range ws {
			// A piece is a run of non-space then a run of space; all but
			// the last end with space.
			body := strings.TrimRightFunc(w, unicode.IsSpace)
			if strings.IndexFunc(body, unicode.IsSpace) >= 0 || i < len(ws)-1 && body == w {
				t.Fatalf("words(%q): piece %q is not one word and its spaces", s, w)
			}
		}
		fs := fragments(s, 3)
		if strings.Join(fs, "") != s || len(fs) > 3 {
			t.Fatalf("fragments(%q, 3) = %q", s, fs)
		}
		if utf8.RuneCountInString(s) >= 2 && len(fs) < 2 {
			t.Fatalf("fragments(%q) gave %d pieces", s, len(fs))
		}
		for _, p := range append(ws, fs...) {
			if p == "" || !utf8.ValidString(p) {
				t.Fatalf("bad piece %q of %q", p, s)
			}
		}
	})
}

func TestLastUserText(t *testing.T) {
	t.Parallel()
	r := Request{Messages: []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("answer")}},
		{Role: llm.RoleUser, Parts: []llm.Part{
			{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "1", Content: "result one"}},
			llm.TextPart("and a note"),
		}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("trailing assistant")}},
	}}
	if got := r.LastUserText(); got != "result one\nand a note" {
		t.Fatalf("LastUserText = %q", got)
	}
	if got := (Request{}).LastUserText(); got != "" {
		t.Fatalf("LastUserText of no messages = %q", got)
	}
}

func TestResolveDefaults(t *testing.T) {
	t.Parallel()
	req := Request{Body: []byte(strings.Repeat("x", 400))}
	a, err := resolve(Turn{ToolCalls: []ToolCall{{Name: "t"}}}, req, "msg_", "toolu_")
	if err != nil {
		t.Fatal(err)
	}
	if a.Stop != "tool_use" || a.Model != "llmtest" || a.Usage.Input != 100 || a.Usage.Output < 1 {
		t.Fatalf("defaults not applied: %+v", a)
	}
	if a.Calls[0].Input != "{}" || !strings.HasPrefix(a.Calls[0].ID, "toolu_") {
		t.Fatalf("call not resolved: %+v", a.Calls[0])
	}
	b, err := resolve(Turn{ToolCalls: []ToolCall{{Name: "t"}}}, req, "msg_", "toolu_")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.Calls[0].ID == b.Calls[0].ID {
		t.Fatal("generated ids repeat")
	}
}
