package cli

import (
	"encoding/json"
	"strings"
)

// brief renders a call's input on one short line.
func brief(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"command", "path", "pattern", "question"} {
			if v, ok := m[k].(string); ok {
				return clipLine(v, 100)
			}
		}
	}
	return clipLine(string(raw), 100)
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
