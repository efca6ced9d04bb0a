package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// maxSettingsFile caps a settings file; a larger one is refused.
const maxSettingsFile = 1 << 20

// settingsFile is the part of Claude Code's settings.json arbor reads.
type settingsFile struct {
	Permissions struct {
		Allow []string `json:"allow"`
		Ask   []string `json:"ask"`
		Deny  []string `json:"deny"`
	} `json:"permissions"`
	Hooks map[string][]hook.SettingsMatcher `json:"hooks"`
	// DisableAllHooks turns off the hooks of the settings files: a
	// project's file those of the project's files, the user's file
	// every file's (Claude Code's disableAllHooks, which keeps the
	// user's hooks when a project's file sets it).
	DisableAllHooks bool `json:"disableAllHooks"`
	// Env are the variables the file sets for the session's commands
	// (settingsEnv).
	Env map[string]string `json:"-"`
}

// settingsPlace is a settings file and the scope of its rules.
type settingsPlace struct {
	path  string
	root  string // the folder its "/path" rules are relative to
	scope permission.Scope
	// hookDir is where its hooks run, CLAUDE_PROJECT_DIR: the project
	// folder of the file, as Claude Code started there would have it.
	hookDir string
}

// readSettings reads the settings files: their rules (mapped to arbor's)
// and their hooks. A file that is not JSON is reported (with the line and
// column) and skipped whole; a part of the right file of the wrong shape
// (permissions.allow, ask, deny, hooks) is reported and left out, the
// others used, so a mistake in one list does not lose the deny rules; a
// key of permissions arbor does not know ("dney") and a top-level key
// that looks like a misspelt one ("permission") are reported; a rule
// that cannot be mapped is reported and left out. The files' env is
// merged, a variable taking its value from the first file (the
// narrowest) that sets it.
func readSettings(places []settingsPlace, ws string, report func(error)) ([]permission.Rule, []hook.Declared, map[string]string) {
	var rules []permission.Rule
	var env map[string]string
	var hooks []hook.Declared
	var scopes []permission.Scope      // of hooks' files
	off := map[permission.Scope]bool{} // disableAllHooks said in a file of the scope
	for _, p := range places {
		b, err := os.ReadFile(p.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && len(b) > maxSettingsFile {
			err = fmt.Errorf("%d bytes, more than the %d a settings file may have", len(b), maxSettingsFile)
		}
		var f settingsFile
		if err == nil {
			f, err = decodeSettings(b, func(part string, err error) {
				report(fmt.Errorf("%s: %s: %w; left out (the rest of the file is used)", p.path, part, err))
			})
		}
		if err != nil {
			report(fmt.Errorf("%s: %w; its rules and hooks are not used", p.path, err))
			continue
		}
		for _, list := range []struct {
			specs  []string
			action permission.Action
		}{{f.Permissions.Deny, permission.Deny}, {f.Permissions.Ask, permission.Ask}, {f.Permissions.Allow, permission.Allow}} {
			for _, spec := range list.specs {
				mapped, err := MapRule(spec, p.root, ws)
				if err == nil {
					for _, m := range mapped {
						r, perr := permission.ParseRule(m, list.action, p.scope)
						if perr != nil {
							err = perr
							break
						}
						rules = append(rules, r)
					}
				}
				if err != nil {
					report(fmt.Errorf("%s: permissions.%s rule %q: %w; left out", p.path, list.action, spec, err))
				}
			}
		}
		if len(f.Hooks) > 0 {
			hooks = append(hooks, hook.Declared{Source: p.path, Dir: p.hookDir, Hooks: f.Hooks})
			scopes = append(scopes, p.scope)
		}
		if f.DisableAllHooks {
			off[p.scope] = true
		}
		env = mergeEnv(env, f.Env)
	}
	var on []hook.Declared
	for i, d := range hooks {
		if !off[permission.ScopeUser] && !off[scopes[i]] {
			on = append(on, d)
		}
	}
	return rules, on, env
}

// decodeSettings decodes a settings file part by part: a part of the wrong
// shape is passed to bad and left out. Only a file that is no JSON object
// fails, its error naming the line and column.
func decodeSettings(b []byte, bad func(part string, err error)) (settingsFile, error) {
	var f settingsFile
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(b, se.Offset)
			return f, fmt.Errorf("line %d, column %d: %w", line, col, err)
		}
		return f, err
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if near := permission.Nearest(k, []string{"permissions", "hooks", "env"}); near != "" && k != near {
			bad(k, fmt.Errorf("%w (did you mean %s?)", errNotSettingsKey, near))
		}
	}
	if raw, ok := top["permissions"]; ok {
		var perms map[string]json.RawMessage
		if err := json.Unmarshal(raw, &perms); err != nil {
			bad("permissions", err)
		}
		for _, k := range slices.Sorted(maps.Keys(perms)) {
			if !slices.Contains(permissionsKeys, k) && !slices.Contains(ignoredPermissionsKeys, k) {
				err := fmt.Errorf("%w: arbor reads %s", errNotPermissionsKey, strings.Join(permissionsKeys, ", "))
				if near := permission.Nearest(k, slices.Concat(permissionsKeys, ignoredPermissionsKeys)); near != "" {
					err = fmt.Errorf("%w (did you mean %s?)", err, near)
				}
				bad("permissions."+k, err)
			}
		}
		for name, list := range map[string]*[]string{"deny": &f.Permissions.Deny, "ask": &f.Permissions.Ask, "allow": &f.Permissions.Allow} {
			if raw, ok := perms[name]; ok {
				if err := json.Unmarshal(raw, list); err != nil {
					*list = nil
					bad("permissions."+name, err)
				}
			}
		}
	}
	if raw, ok := top["hooks"]; ok {
		if err := json.Unmarshal(raw, &f.Hooks); err != nil {
			f.Hooks = nil
			bad("hooks", err)
		}
	}
	if raw, ok := top["env"]; ok {
		f.Env = settingsEnv(raw, bad)
	}
	if raw, ok := top["disableAllHooks"]; ok {
		if err := json.Unmarshal(raw, &f.DisableAllHooks); err != nil {
			bad("disableAllHooks", err)
		}
	}
	return f, nil
}

// permissionsKeys are the keys of a settings file's permissions that
// arbor reads; ignoredPermissionsKeys Claude Code's others, which it
// leaves to Claude Code (see docs/project-files.md). Any other key there
// is reported, as is a top-level key that looks like a misspelt
// "permissions" or "hooks" (the other top-level keys are Claude Code's
// many settings arbor ignores).
var (
	permissionsKeys        = []string{"allow", "ask", "deny"}
	ignoredPermissionsKeys = []string{"additionalDirectories", "defaultMode", "disableBypassPermissionsMode"}
)

var (
	errNotSettingsKey    = errors.New("not a settings key arbor reads")
	errNotPermissionsKey = errors.New("not a key of permissions")
)

// lineCol is the 1-based line and column of byte offset off in b (a
// json.SyntaxError's Offset is just past the byte it stopped at).
func lineCol(b []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := 0; i < int(off)-1 && i < len(b); i++ {
		if b[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// ErrUnmappable marks a Claude Code rule arbor has no equivalent of.
var ErrUnmappable = errors.New("no arbor equivalent")

// fileTools are the arbor tools a Claude Code file rule covers: Read
// rules apply to every tool that reads files, Edit rules to every tool
// that writes them (Claude Code's documented meaning).
var fileTools = map[string][]string{
	"Read":      {"read_file", "view_image", "grep", "glob", "list_directory"},
	"Edit":      {"edit", "write_file", "apply_patch", "delete"},
	"MultiEdit": {"edit"},
	"Write":     {"write_file"},
	"Glob":      {"glob"},
	"Grep":      {"grep"},
	"LS":        {"list_directory"},
}

// MapRule turns a Claude Code permission rule into arbor rule specs:
// "Bash(npm run test:*)" → "shell(npm run test *)", "Read(./.env)" →
// read_file(.env) and the other reading tools, "Edit(src/**)" →
// edit(src/**), write_file(src/**), apply_patch(src/**) and
// delete(src/**), "mcp__server__tool" unchanged.
// File patterns follow Claude Code's anchors: "//abs" is an absolute
// path, "~/p" the home's, "/p" relative to root (the settings' project),
// "./p" and "p" relative to the workspace, where a pattern without '/'
// matches in every folder (gitignore's rule). A rule for a tool arbor
// does not have is ErrUnmappable.
func MapRule(spec, root, ws string) ([]string, error) {
	spec = strings.TrimSpace(spec)
	name, pattern, hasPattern := spec, "", false
	if i := strings.IndexByte(spec, '('); i >= 0 {
		if !strings.HasSuffix(spec, ")") {
			return nil, fmt.Errorf("missing closing parenthesis")
		}
		name, pattern, hasPattern = strings.TrimSpace(spec[:i]), strings.TrimSpace(spec[i+1:len(spec)-1]), true
	}
	switch {
	case strings.HasPrefix(name, "mcp__"):
		if hasPattern {
			return nil, fmt.Errorf("%w: an MCP rule names a tool or a server, without a pattern", ErrUnmappable)
		}
		return []string{name}, nil
	case name == "Bash":
		if !hasPattern || pattern == "*" {
			return []string{"shell"}, nil
		}
		return []string{tool.RuleFromClaudeCode("Bash(" + pattern + ")")}, nil
	case name == "WebFetch":
		switch {
		case !hasPattern || pattern == "*":
			return []string{"web_fetch"}, nil
		case strings.HasPrefix(pattern, "domain:") && strings.TrimSpace(pattern[len("domain:"):]) != "":
			return []string{"web_fetch(domain:" + strings.TrimSpace(pattern[len("domain:"):]) + ")"}, nil
		}
		return nil, fmt.Errorf("%w: a WebFetch rule names a host as domain:example.com", ErrUnmappable)
	case name == "WebSearch":
		return nil, fmt.Errorf("%w: arbor has no WebSearch tool", ErrUnmappable)
	}
	tools, ok := fileTools[name]
	if !ok {
		if t := tool.FromClaudeCode(name); t != name {
			tools = []string{t}
		} else {
			return nil, fmt.Errorf("%w: arbor has no tool like Claude Code's %s", ErrUnmappable, name)
		}
	}
	var patterns []string
	if hasPattern && pattern != "" && pattern != "*" && pattern != "**" {
		ps, err := mapPath(pattern, root, ws)
		if err != nil {
			return nil, err
		}
		patterns = ps
	}
	var out []string
	for _, t := range tools {
		if patterns == nil {
			out = append(out, t)
		}
		for _, p := range patterns {
			out = append(out, t+"("+p+")")
		}
	}
	return out, nil
}

// mapPath maps a Claude Code path pattern to arbor's. As in a
// .gitignore (Claude Code's matching), a pattern that names a folder
// covers everything in it: "./secrets" and "secrets/" deny
// "secrets/key.txt" too, so each pattern also stands as "p/**"; a
// trailing '/' (a folder only) is dropped.
func mapPath(p, root, ws string) ([]string, error) {
	if len(p) > 1 && strings.HasSuffix(p, "/") && p != "//" {
		p = strings.TrimRight(p, "/")
	}
	var out []string
	for _, b := range anchorPath(p, root, ws) {
		out = append(out, b)
		if !strings.HasSuffix(b, "/**") && b != "**" {
			out = append(out, strings.TrimSuffix(b, "/")+"/**")
		}
	}
	return out, nil
}

// anchorPath places a Claude Code path pattern: "//abs" is absolute, "~/p"
// the home's, "/p" relative to root, "./p" and "p" relative to ws, where
// a pattern without '/' matches in every folder.
func anchorPath(p, root, ws string) []string {
	switch {
	case strings.HasPrefix(p, "//"):
		return []string{p[1:]}
	case strings.HasPrefix(p, "~/"):
		return []string{p}
	case strings.HasPrefix(p, "/"):
		abs := filepath.Join(root, p[1:])
		if rel, err := filepath.Rel(ws, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return []string{filepath.ToSlash(rel)}
		}
		return []string{filepath.ToSlash(abs)}
	case strings.HasPrefix(p, "./"):
		return []string{p[2:]}
	case strings.HasPrefix(p, "../"):
		return []string{filepath.ToSlash(filepath.Join(ws, p))}
	case !strings.Contains(p, "/"):
		// gitignore: a name without '/' matches in every folder.
		return []string{p, "**/" + p}
	}
	return []string{p}
}
