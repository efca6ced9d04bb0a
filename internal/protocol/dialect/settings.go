package dialect

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/config"
)

// SandboxSettings are the Claude Agent SDK's sandbox option (Claude Code's
// settings key sandbox), as far as arbor's sandbox has a meaning for them
// (docs/sandbox.md). The SDK sends them in --settings, or in the
// initialize request's settings under --await-initialize.
type SandboxSettings struct {
	Enabled bool
	// FailIfUnavailable refuses to start where no sandbox works (arbor's
	// required); the SDK sets it when it enables the sandbox.
	FailIfUnavailable bool
	// AutoAllow lets a confined shell command run without asking
	// (autoAllowBashIfSandboxed, default true).
	AutoAllow bool
	// AllowUnsandboxed lets a call ask to run outside the sandbox
	// (allowUnsandboxedCommands, default true).
	AllowUnsandboxed bool
	// AllowedDomains, AllowWrite and DenyRead are network.allowedDomains,
	// filesystem.allowWrite and filesystem.denyRead.
	AllowedDomains, AllowWrite, DenyRead []string
}

// sdkSettings is the part of Claude Code's settings arbor reads: only
// sandbox; any other key is refused (settingsKeys says so).
type sdkSettings struct {
	Sandbox *struct {
		Enabled                  *bool `json:"enabled"`
		FailIfUnavailable        *bool `json:"failIfUnavailable"`
		AutoAllowBashIfSandboxed *bool `json:"autoAllowBashIfSandboxed"`
		AllowUnsandboxedCommands *bool `json:"allowUnsandboxedCommands"`
		Network                  struct {
			AllowedDomains []string `json:"allowedDomains"`
		} `json:"network"`
		Filesystem struct {
			AllowWrite []string `json:"allowWrite"`
			DenyRead   []string `json:"denyRead"`
		} `json:"filesystem"`
	} `json:"sandbox"`
}

// The keys of settings.sandbox arbor takes; a value under any other is
// refused, never ignored.
var sandboxKeys = map[string][]string{
	"":           {"enabled", "failIfUnavailable", "autoAllowBashIfSandboxed", "allowUnsandboxedCommands", "network", "filesystem"},
	"network":    {"allowedDomains"},
	"filesystem": {"allowWrite", "denyRead"},
}

// parseSettings reads the settings the SDK passes: a JSON object, or the
// path of a file holding one.
func parseSettings(arg string) (*SandboxSettings, error) {
	raw := []byte(strings.TrimSpace(arg))
	if !bytes.HasPrefix(raw, []byte("{")) {
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, refuse("--settings %s: %v", arg, err)
		}
		raw = b
	}
	return parseSettingsJSON(raw, "--settings")
}

// parseSettingsJSON takes settings that set nothing but sandbox.
func parseSettingsJSON(raw []byte, where string) (*SandboxSettings, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, refuse("%s: not a JSON object: %v", where, err)
	}
	if bad := setKeys(top, []string{"sandbox"}); len(bad) > 0 {
		return nil, refuse("%s: arbor takes only the sandbox settings, so %s refused rather than ignored", where, strings.Join(bad, ", "))
	}
	if !hasJSONValue(top["sandbox"]) {
		return nil, nil
	}
	var sb map[string]json.RawMessage
	if err := json.Unmarshal(top["sandbox"], &sb); err != nil {
		return nil, refuse("%s: sandbox is not an object: %v", where, err)
	}
	bad := setKeys(sb, sandboxKeys[""])
	for _, sub := range []string{"network", "filesystem"} {
		var m map[string]json.RawMessage
		if hasJSONValue(sb[sub]) && json.Unmarshal(sb[sub], &m) == nil {
			for _, k := range setKeys(m, sandboxKeys[sub]) {
				bad = append(bad, sub+"."+k)
			}
		}
	}
	if len(bad) > 0 {
		return nil, refuse("%s: sandbox.%s not supported by arbor, so refused rather than ignored", where, strings.Join(bad, ", sandbox."))
	}
	var s sdkSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, refuse("%s: %v", where, err)
	}
	in := s.Sandbox
	out := &SandboxSettings{AutoAllow: true, AllowUnsandboxed: true,
		AllowedDomains: in.Network.AllowedDomains, AllowWrite: in.Filesystem.AllowWrite, DenyRead: in.Filesystem.DenyRead}
	for dst, src := range map[*bool]*bool{&out.Enabled: in.Enabled, &out.FailIfUnavailable: in.FailIfUnavailable,
		&out.AutoAllow: in.AutoAllowBashIfSandboxed, &out.AllowUnsandboxed: in.AllowUnsandboxedCommands} {
		if src != nil {
			*dst = *src
		}
	}
	return out, nil
}

// setKeys lists the keys of m that carry a value and are not in known,
// sorted.
func setKeys(m map[string]json.RawMessage, known []string) []string {
	var bad []string
	for k, v := range m {
		if !slices.Contains(known, k) && hasJSONValue(v) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

// Mode is the arbor sandbox mode the settings ask for.
func (s *SandboxSettings) Mode() string {
	switch {
	case s == nil || !s.Enabled:
		return "off"
	case s.FailIfUnavailable:
		return "required"
	}
	return "auto"
}

// Config is the sandbox option as arbor's config (docs/sandbox.md); nil
// leaves the sandbox off, as Claude Code does.
func (s *SandboxSettings) Config() *config.Sandbox {
	if s == nil {
		return nil
	}
	auto, out := s.AutoAllow, s.AllowUnsandboxed
	return &config.Sandbox{Mode: s.Mode(), Writable: s.AllowWrite, DenyRead: s.DenyRead,
		Network: config.SandboxNetwork{Allow: s.AllowedDomains}, AutoAllow: &auto, AllowUnsandboxed: &out}
}
