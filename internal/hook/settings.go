package hook

import (
	"fmt"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// SettingsMatcher is one entry of a settings file's hooks[event]
// (Claude Code's .claude/settings.json shape):
//
//	{"matcher": "Bash", "hooks": [{"type": "command", "command": "…", "timeout": 30}]}
type SettingsMatcher struct {
	Matcher string         `json:"matcher,omitempty"`
	Hooks   []SettingsHook `json:"hooks"`
}

// SettingsHook is one hook of a SettingsMatcher. Timeout is in seconds.
type SettingsHook struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout,omitempty"`
}

// Declared is a settings file's hooks with where they were read.
type Declared struct {
	Source string // the file, for reports
	// Dir is the project folder of the file: its hooks run there, with
	// CLAUDE_PROJECT_DIR set to it; "" takes CommandOptions.Dir.
	Dir   string
	Hooks map[string][]SettingsMatcher
}

// CommandOptions are what every command hook of a set shares.
type CommandOptions struct {
	// Dir is the working directory and CLAUDE_PROJECT_DIR of the hooks
	// of a Declared without its own Dir.
	Dir     string
	Env     []string                // added to the environment
	Sandbox func() *sandbox.Sandbox // nil (or nil from it): unconfined
}

// FromSettings turns declared hooks into the runner's matchers, in the
// order given (a file, then the next), every hook a Command. What cannot
// be used (an unknown event, a type other than command, an empty command,
// a bad matcher) is left out and returned as a problem naming its file:
// reported, never fatal.
func FromSettings(decls []Declared, o CommandOptions) (map[Event][]Matcher, []error) {
	out := map[Event][]Matcher{}
	var problems []error
	for _, d := range decls {
		dir := d.Dir
		if dir == "" {
			dir = o.Dir
		}
		env := append(slices.Clip(o.Env), "CLAUDE_PROJECT_DIR="+dir)
		for _, event := range sortedKeys(d.Hooks) {
			e := Event(event)
			if !Known(e) {
				problems = append(problems, fmt.Errorf("%s: hooks for %q: no such event (arbor runs %v); left out", d.Source, event, Events))
				continue
			}
			for i, m := range d.Hooks[event] {
				var hs []Handler
				for j, h := range m.Hooks {
					where := fmt.Sprintf("%s: hooks.%s[%d].hooks[%d]", d.Source, event, i, j)
					switch {
					case h.Type != "command":
						problems = append(problems, fmt.Errorf("%s: type %q is not supported (only \"command\"); left out", where, h.Type))
						continue
					case h.Command == "":
						problems = append(problems, fmt.Errorf("%s: no command; left out", where))
						continue
					case h.Timeout < 0:
						problems = append(problems, fmt.Errorf("%s: negative timeout %v; left out", where, h.Timeout))
						continue
					}
					hs = append(hs, &Command{Command: h.Command, Timeout: time.Duration(h.Timeout * float64(time.Second)),
						Dir: dir, Env: env, Sandbox: o.Sandbox, ClaudeCode: true, Source: d.Source})
				}
				if len(hs) == 0 {
					continue
				}
				hm, err := NewMatcher(m.Matcher, hs...)
				if err != nil {
					problems = append(problems, fmt.Errorf("%s: hooks.%s[%d]: %w; left out", d.Source, event, i, err))
					continue
				}
				out[e] = append(out[e], hm)
			}
		}
	}
	return out, problems
}

// Merge returns the matchers of a and then b, per event.
func Merge(a, b map[Event][]Matcher) map[Event][]Matcher {
	out := map[Event][]Matcher{}
	for e, ms := range a {
		out[e] = append(out[e], ms...)
	}
	for e, ms := range b {
		out[e] = append(out[e], ms...)
	}
	return out
}

func sortedKeys(m map[string][]SettingsMatcher) []string {
	var ks []string
	for _, e := range Events { // Claude Code's order first
		if _, ok := m[string(e)]; ok {
			ks = append(ks, string(e))
		}
	}
	var unknown []string
	for k := range m {
		if !Known(Event(k)) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return append(ks, unknown...)
}
