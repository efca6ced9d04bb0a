package app

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestConversationTitle: a prompt's title is its first line that is not
// blank, its spaces collapsed, cut at titleRunes runes.
func TestConversationTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", titleRunes+5)
	for _, c := range []struct{ prompt, want string }{
		{"fix the login page", "fix the login page"},
		{"\n  \n\t fix   the\tlogin page \nthen run the tests", "fix the login page"},
		{"/review main.go", "/review main.go"},
		{long, strings.Repeat("é", titleRunes-1) + "…"},
		{strings.Repeat("word ", 40), strings.TrimSpace(strings.Repeat("word ", 16)) + "…"},
		{" \n\r\n\t", ""},
		{"", ""},
	} {
		got := conversationTitle(c.prompt)
		if got != c.want {
			t.Errorf("conversationTitle(%q) = %q; want %q", c.prompt, got, c.want)
		}
		if n := len([]rune(got)); n > titleRunes {
			t.Errorf("conversationTitle(%q) has %d runes", c.prompt, n)
		}
	}
}

// TestNameConversation: the first prompt names a conversation once and
// for good, a resumed one keeps its title, a session made with a title
// keeps it, and a title that cannot be stored is reported, not fatal.
func TestNameConversation(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "c"), "XDG_STATE_HOME": filepath.Join(home, "s"),
		"ANTHROPIC_API_KEY": "sk-ant-title-0001"}
	var diag bytes.Buffer
	a, err := Open(context.Background(), Options{Workspace: home, Getenv: func(k string) string { return env[k] }, Diag: &diag})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	title := func(id string) string {
		t.Helper()
		s, err := a.Store.GetSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return s.Title
	}

	s, err := a.NewSession(ctx, SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.NameConversation(ctx, s, "  \n"); got != "" || title(s.ID) != "" {
		t.Fatalf("a blank prompt gave the title %q (stored %q)", got, title(s.ID))
	}
	if got := a.NameConversation(ctx, s, "Fix the login page\nand its tests"); got != "Fix the login page" || title(s.ID) != got {
		t.Fatalf("first prompt: gave %q, stored %q; want both %q", got, title(s.ID), "Fix the login page")
	}
	if got := a.NameConversation(ctx, s, "a later prompt"); got != "" || title(s.ID) != "Fix the login page" {
		t.Fatalf("a later prompt gave %q, stored %q; want the first title kept", got, title(s.ID))
	}

	r, err := a.ResumeSession(ctx, s.ID, SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.NameConversation(ctx, r, "after resuming"); got != "" || title(s.ID) != "Fix the login page" {
		t.Fatalf("a resumed conversation's prompt gave %q, stored %q; want its title kept", got, title(s.ID))
	}

	named, err := a.NewSession(ctx, SessionOptions{Model: "anthropic/claude-test", Title: "#3 leaf"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.NameConversation(ctx, named, "a prompt"); got != "" || title(named.ID) != "#3 leaf" {
		t.Fatalf("a session made with a title: gave %q, stored %q", got, title(named.ID))
	}

	keyed, err := a.NewSession(ctx, SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.NameConversation(ctx, keyed, "try the key sk-ant-title-0001 again"); got != "try the key [REDACTED] again" || title(keyed.ID) != got {
		t.Fatalf("a prompt with a configured secret: gave %q, stored %q; want it redacted", got, title(keyed.ID))
	}

	if got, err := a.RenameConversation(ctx, keyed, " key sk-ant-title-0001 "); err != nil || got != "key [REDACTED]" || title(keyed.ID) != got {
		t.Fatalf("a rename with a configured secret: gave %q (%v), stored %q; want it redacted", got, err, title(keyed.ID))
	}
	if _, err := a.RenameConversation(ctx, keyed, ""); err != nil || title(keyed.ID) != "" {
		t.Fatalf("a rename to nothing: stored %q (%v)", title(keyed.ID), err)
	}
	if got := a.NameConversation(ctx, keyed, "named again"); got != "named again" {
		t.Fatalf("after a cleared title the next prompt gave %q; want it to name the conversation", got)
	}

	gone := &Session{ID: "no-such-session"}
	if got := a.NameConversation(ctx, gone, "a prompt"); got != "" || !strings.Contains(diag.String(), "no-such-session") {
		t.Fatalf("an unknown session: gave %q, diag %q; want none and a warning naming it", got, diag.String())
	}
	if gone.titled.Load() {
		t.Fatal("a title that was not stored counts as given")
	}
}
