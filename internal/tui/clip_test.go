package tui_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/tui"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"two\nlines", 20, "two lines"},
		{"héllo wörld", 6, "héllo…"},
		{"exactly", 7, "exactly"},
	} {
		if got := tui.Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q; want %q", c.in, c.n, got, c.want)
		}
	}
}
