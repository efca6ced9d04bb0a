package dialect_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol/dialect"
)

// TestSettingSources: --setting-sources picks the project files arbor
// reads; absent is nil (all of them), "" is none, an unknown source is a
// usage error.
func TestSettingSources(t *testing.T) {
	t.Parallel()
	base := []string{"--output-format", "stream-json", "--input-format", "stream-json"}
	for _, c := range []struct {
		args []string
		want string // "<nil>" for nil
	}{
		{nil, "<nil>"},
		{[]string{"--setting-sources", ""}, ""},
		{[]string{"--setting-sources=user,project"}, "user,project"},
		{[]string{"--setting-sources", "local"}, "local"},
	} {
		l, _, err := dialect.ParseClaudeCode(append(base, c.args...), strings.NewReader(""))
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		got := strings.Join(l.SettingSources, ",")
		if l.SettingSources == nil {
			got = "<nil>"
		}
		if got != c.want {
			t.Errorf("%v: SettingSources %q, want %q", c.args, got, c.want)
		}
	}
	if _, _, err := dialect.ParseClaudeCode(append(base, "--setting-sources", "user,policy"), strings.NewReader("")); !errors.Is(err, dialect.ErrUsage) || !strings.Contains(err.Error(), `"policy"`) {
		t.Fatalf("err = %v; want a usage error naming the source", err)
	}
}
