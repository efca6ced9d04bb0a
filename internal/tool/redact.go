package tool

import (
	"regexp"
	"strings"
	"sync"
)

// redacted replaces a secret in output.
const redacted = "[REDACTED]"

// minFragment is the shortest piece of a secret a cut can leave that
// Redact removes; shorter pieces are too common to be told from output.
const minFragment = 6

// cutNote matches the note headTail puts where it dropped bytes.
var cutNote = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\n\[… \d+ bytes truncated …\]\n`)
})

// Redact returns s with every secret replaced by [REDACTED]. Where output
// was cut (headTail's note), a secret the cut went through left its start
// before the note and its end after it: those pieces are replaced too.
func Redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	if !strings.Contains(s, " bytes truncated …]") {
		return s
	}
	loc := cutNote().FindStringIndex(s)
	if loc == nil {
		return s
	}
	before, note, after := s[:loc[0]], s[loc[0]:loc[1]], s[loc[1]:]
	for _, v := range secrets {
		for k := len(v) - 1; k >= minFragment; k-- {
			if strings.HasSuffix(before, v[:k]) {
				before = before[:len(before)-k] + redacted
				break
			}
		}
		for k := len(v) - 1; k >= minFragment; k-- {
			if strings.HasPrefix(after, v[len(v)-k:]) {
				after = redacted + after[k:]
				break
			}
		}
	}
	return before + note + after
}
