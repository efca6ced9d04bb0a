package app_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
)

func TestGoalText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plan := write("plan.md", []byte("the plan\n"))
	mib := bytes.Repeat([]byte("x"), 1<<20)
	full := write("full.md", mib)
	huge := write("huge.md", append(mib, '\n'))
	nul := write("nul.md", []byte("the plan\x00\n"))
	latin1 := write("latin1.md", []byte("caf\xe9\n"))
	for _, c := range []struct {
		args      []string
		want, err string
	}{
		{args: []string{"write", "a", "haiku"}, want: "write a haiku"},
		{args: []string{plan}, want: "the plan\n"},
		{args: []string{dir}, err: "is a directory"},
		{args: []string{filepath.Join(dir, "missing.md")}, err: "add words to it"},
		{args: []string{"fix the readme.md"}, want: "fix the readme.md"},
		{args: []string{huge}, err: "huge.md is larger than 1 MiB"},
		{args: []string{nul}, err: "nul.md is not text: it holds a NUL byte (at byte 8)"},
		{args: []string{latin1}, err: "latin1.md is not text: it is not valid UTF-8 (from byte 3)"},
	} {
		got, err := app.GoalText(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("GoalText(%q) err = %v, want one containing %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("GoalText(%q) = %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	if got, err := app.GoalText([]string{full}); err != nil || got != string(mib) {
		t.Errorf("GoalText of a plan of exactly 1 MiB: %d bytes, %v; want it whole", len(got), err)
	}
}
