package project

import (
	"strings"
	"testing"
)

// TestSettingsPartsOfTheWrongShape: a settings file whose allow list has
// the wrong shape keeps its deny rules and hooks (before, the whole file
// was dropped, and a denied command ran); one that is not JSON is
// reported with the line and column of the mistake.
func TestSettingsPartsOfTheWrongShape(t *testing.T) {
	t.Parallel()
	var bad []string
	f, err := decodeSettings([]byte(`{"permissions": {"allow": "Bash", "deny": ["Bash(rm:*)"]},
  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`), func(part string, err error) { bad = append(bad, part) })
	if err != nil || len(f.Permissions.Deny) != 1 || len(f.Permissions.Allow) != 0 || len(f.Hooks) != 1 || len(bad) != 1 || bad[0] != "permissions.allow" {
		t.Fatalf("decoded %+v, bad parts %q, %v; want the deny rule and the hook kept, allow reported", f, bad, err)
	}
	_, err = decodeSettings([]byte("{\n  \"permissions\": {\"deny\": [\"Bash(rm:*)\"],}\n}"), func(string, error) {})
	if err == nil || !strings.Contains(err.Error(), "line 2, column") {
		t.Fatalf("a trailing comma: %v, want its line and column", err)
	}
}
