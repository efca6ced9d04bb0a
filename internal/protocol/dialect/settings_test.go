package dialect

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSandboxSettings: the SDK's sandbox option, from --settings (JSON or
// a file) or the initialize request, becomes arbor's sandbox; what arbor
// cannot honour is refused, naming it.
func TestSandboxSettings(t *testing.T) {
	t.Parallel()
	sdk := []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	parse := func(t *testing.T, input string, args ...string) (Launch, error) {
		t.Helper()
		l, _, err := ParseClaudeCode(append(slices.Clone(sdk), args...), strings.NewReader(input))
		return l, err
	}

	l, err := parse(t, "", "--settings", `{"sandbox":{"enabled":true,"failIfUnavailable":true,"autoAllowBashIfSandboxed":false,"network":{"allowedDomains":["example.com"]},"filesystem":{"allowWrite":["/srv/cache"],"denyRead":["~/secret"]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	s := l.Sandbox
	if s.Mode() != "required" || s.AutoAllow || !s.AllowUnsandboxed || !slices.Equal(s.AllowedDomains, []string{"example.com"}) ||
		!slices.Equal(s.AllowWrite, []string{"/srv/cache"}) || !slices.Equal(s.DenyRead, []string{"~/secret"}) {
		t.Fatalf("sandbox %+v", s)
	}

	file := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(file, []byte(`{"sandbox":{"enabled":true,"failIfUnavailable":false}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := parse(t, "", "--settings", file); err != nil || l.Sandbox.Mode() != "auto" {
		t.Fatalf("a settings file: %+v, %v", l.Sandbox, err)
	}
	if l, err := parse(t, "", "--settings", `{"sandbox":{"enabled":false}}`); err != nil || l.Sandbox.Mode() != "off" {
		t.Fatalf("enabled false: %+v, %v", l.Sandbox, err)
	}

	const init = `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","settings":{"sandbox":{"enabled":true}}}}` + "\n"
	if l, err := parse(t, init, "--await-initialize"); err != nil || l.Sandbox.Mode() != "auto" {
		t.Fatalf("settings in the initialize request: %+v, %v", l.Sandbox, err)
	}

	for name, c := range map[string]struct{ input, settings, want string }{
		"other key":     {settings: `{"model":"x","sandbox":{"enabled":true}}`, want: "model refused"},
		"sandbox key":   {settings: `{"sandbox":{"enabled":true,"excludedCommands":["git"]}}`, want: "sandbox.excludedCommands not supported"},
		"network key":   {settings: `{"sandbox":{"network":{"allowUnixSockets":["/s"]}}}`, want: "sandbox.network.allowUnixSockets not supported"},
		"not json":      {settings: `{nope`, want: "not a JSON object"},
		"no such file":  {settings: "/no/such/settings.json", want: "no such file"},
		"init settings": {input: `{"type":"control_request","request_id":"r1","request":{"subtype":"initialize","settings":{"model":"x"}}}` + "\n", want: "model refused"},
	} {
		args := []string{"--settings", c.settings}
		if c.input != "" {
			args = []string{"--await-initialize"}
		}
		if _, err := parse(t, c.input, args...); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want a usage error with %q", name, err, c.want)
		}
	}
}
