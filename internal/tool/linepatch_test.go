package tool

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestStructuredPatch: hunks as jsdiff's structuredPatch makes them for
// Claude Code (3 lines of context; changes at most 6 unchanged lines
// apart share a hunk). testdata of package hook compares single hunks
// with the real CLI's.
func TestStructuredPatch(t *testing.T) {
	t.Parallel()
	lines := func(repl map[int]string) string {
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			s := fmt.Sprintf("l%d", i)
			if r, ok := repl[i]; ok {
				s = r
			}
			b.WriteString(s + "\n")
		}
		return b.String()
	}
	for _, c := range []struct {
		name, before, after, want string
	}{
		{"two-hunks", lines(nil), lines(map[int]string{3: "x", 17: "y"}),
			`[{"oldStart":1,"oldLines":6,"newStart":1,"newLines":6,"lines":[" l1"," l2","-l3","+x"," l4"," l5"," l6"]},` +
				`{"oldStart":14,"oldLines":7,"newStart":14,"newLines":7,"lines":[" l14"," l15"," l16","-l17","+y"," l18"," l19"," l20"]}]`},
		{"one-hunk", lines(nil), lines(map[int]string{3: "x", 9: "y"}),
			`[{"oldStart":1,"oldLines":12,"newStart":1,"newLines":12,"lines":[" l1"," l2","-l3","+x"," l4"," l5"," l6"," l7"," l8","-l9","+y"," l10"," l11"," l12"]}]`},
		{"insert", "a\nc\n", "a\nb\nc\n", `[{"oldStart":1,"oldLines":2,"newStart":1,"newLines":3,"lines":[" a","+b"," c"]}]`},
		{"no-newline", "a\nb", "a\nb\n", `[{"oldStart":1,"oldLines":2,"newStart":1,"newLines":2,"lines":[" a","-b","\\ No newline at end of file","+b"]}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, _ := json.Marshal(structuredPatch(c.before, c.after))
			if string(got) != c.want {
				t.Errorf("structuredPatch\n got %s\nwant %s", got, c.want)
			}
		})
	}
}
