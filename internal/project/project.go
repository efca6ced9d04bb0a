package project

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/permission"
)

// Options say where to look.
type Options struct {
	// Workspace is the folder the agent works in (absolute).
	Workspace string
	// UserDir is arbor's folder under the config home
	// ($XDG_CONFIG_HOME/arbor): AGENTS.md, skills/, commands/,
	// settings.json of the user. "" reads no user files.
	UserDir string
	// Home is the user's home: ~/.claude/skills, ~/.agents/skills and
	// ~/.claude/commands are the user's too, and "~/" in imports is it.
	Home string
	// Sources, when not nil, reads only these of Claude Code's setting
	// sources (--setting-sources): "user" (the user's files), "project"
	// (the project's files but the local ones), "local"
	// (CLAUDE.local.md, .claude/settings.local.json). nil reads all.
	Sources []string
}

// reads reports whether o's Sources take source.
func (o Options) reads(source string) bool {
	return o.Sources == nil || slices.Contains(o.Sources, source)
}

// Knowledge is what a workspace's files say.
type Knowledge struct {
	Workspace string
	// Root is the repository's root (the nearest folder above the
	// workspace holding .git), or the workspace.
	Root         string
	Instructions []Instruction
	Nested       []Nested
	// PathRules are the rules files for some files only (their "paths"),
	// listed by the prompt.
	PathRules []PathRule
	Skills    []Skill
	Commands  []Command
	// Rules are the settings files' permission rules, mapped to arbor's.
	Rules []permission.Rule
	// Hooks are the settings files' hooks, in the order of the files.
	Hooks []hook.Declared
	// Env are the variables the settings files set (their "env"), for
	// the commands a session starts: shell commands, background jobs,
	// hooks and MCP servers; a variable set in several files has the
	// narrowest file's value.
	Env map[string]string
	// Problems are what was skipped or cut, and why (each names its
	// file): reported at start, never fatal.
	Problems []error
}

// Load reads a workspace's project files. It never fails: what cannot be
// read is a Problem.
func Load(o Options) *Knowledge {
	ws := filepath.Clean(o.Workspace)
	k := &Knowledge{Workspace: ws, Root: repoRoot(ws)}
	report := func(err error) { k.Problems = append(k.Problems, err) }

	fence, err := filepath.EvalSymlinks(k.Root)
	if err != nil {
		fence = k.Root
	}
	r := &instructionReader{home: o.Home, fence: fence, left: DefaultMaxInstructions, seen: map[string]bool{}, report: report}
	if o.reads("user") {
		if o.UserDir != "" {
			r.readFile(filepath.Join(o.UserDir, "AGENTS.md"), ws, "", 0, false)
		}
		if o.Home != "" {
			r.readFile(filepath.Join(o.Home, ".claude", "CLAUDE.md"), ws, "", 0, false)
			k.PathRules = append(k.PathRules, r.readRules(filepath.Join(o.Home, ".claude", "rules"), ws, false)...)
		}
	}
	for _, d := range chain(k.Root, ws) {
		for _, name := range instructionNames {
			source := "project"
			if name == "CLAUDE.local.md" {
				source = "local"
				if o.reads("project") { // Claude Code's order: rules before the local file
					k.PathRules = append(k.PathRules, r.readRules(filepath.Join(d, ".claude", "rules"), d, true)...)
				}
			}
			if o.reads(source) {
				r.readFile(filepath.Join(d, name), d, "", 0, true)
			}
		}
	}
	k.Instructions = r.out
	if o.reads("project") {
		k.Nested = nested(ws)
	}

	var roots []skillRoot
	var cmdRoots []string
	for _, d := range uniq(ws, k.Root) {
		if !o.reads("project") {
			break
		}
		for _, s := range skillDirs {
			roots = append(roots, skillRoot{dir: filepath.Join(d, s), source: "project"})
		}
		for _, c := range commandDirs {
			cmdRoots = append(cmdRoots, filepath.Join(d, c))
		}
	}
	if !o.reads("user") {
		o.UserDir, o.Home = "", ""
	}
	if o.UserDir != "" {
		roots = append(roots, skillRoot{dir: filepath.Join(o.UserDir, "skills"), source: "user"})
		cmdRoots = append(cmdRoots, filepath.Join(o.UserDir, "commands"))
	}
	if o.Home != "" {
		roots = append(roots, skillRoot{dir: filepath.Join(o.Home, ".claude", "skills"), source: "user"},
			skillRoot{dir: filepath.Join(o.Home, ".agents", "skills"), source: "user"})
		cmdRoots = append(cmdRoots, filepath.Join(o.Home, ".claude", "commands"))
	}
	k.Skills = findSkills(roots, fence, report)
	k.Commands = findCommands(cmdRoots, fence, report)

	// Narrowest first, as Claude Code's precedence: local, project, then
	// arbor's own project file, then the user's.
	var places []settingsPlace
	for _, d := range uniq(ws, k.Root) {
		if o.reads("local") {
			places = append(places, settingsPlace{path: filepath.Join(d, ".claude", "settings.local.json"), root: d, scope: permission.ScopeProject, hookDir: d})
		}
		if o.reads("project") {
			places = append(places,
				settingsPlace{path: filepath.Join(d, ".claude", "settings.json"), root: d, scope: permission.ScopeProject, hookDir: d},
				settingsPlace{path: filepath.Join(d, ".arbor", "settings.json"), root: d, scope: permission.ScopeProject, hookDir: d})
		}
	}
	if o.UserDir != "" {
		places = append(places, settingsPlace{path: filepath.Join(o.UserDir, "settings.json"), root: o.Home, scope: permission.ScopeUser, hookDir: ws})
	}
	k.Rules, k.Hooks, k.Env = readSettings(places, ws, report)
	return k
}

// uniq is its arguments without repeats, in order.
func uniq(ds ...string) []string {
	var out []string
	for _, d := range ds {
		if len(out) == 0 || out[len(out)-1] != d {
			out = append(out, d)
		}
	}
	return out
}

// Skill returns the skill called name.
func (k *Knowledge) Skill(name string) (Skill, bool) {
	for _, s := range k.Skills {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// Command returns the custom command called name.
func (k *Knowledge) Command(name string) (Command, bool) {
	for _, c := range k.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

// SkillReadRules allow the reading tools into the skills' folders that
// lie outside the workspace (a user's skills), so the files beside a
// SKILL.md are readable through the file tools.
func (k *Knowledge) SkillReadRules() []permission.Rule {
	var out []permission.Rule
	for _, s := range k.Skills {
		if rel, err := filepath.Rel(k.Workspace, s.Dir); err == nil && !strings.HasPrefix(rel, "..") {
			continue
		}
		for _, t := range fileTools["Read"] {
			r, err := permission.ParseRule(t+"("+escapeGlob(filepath.ToSlash(s.Dir))+"/**)", permission.Allow, permission.ScopeUser)
			if err == nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// escapeGlob escapes the characters a rule's glob treats specially.
func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "(", `\(`, ")", `\)`).Replace(s)
}

// Prompt is the system prompt's part for the workspace's files: the
// instruction files in order (user's, then repository root down to the
// workspace), the nested files by name, and the skills by name and
// description; "" when there are none.
func (k *Knowledge) Prompt() string {
	var b strings.Builder
	if len(k.Instructions) > 0 {
		b.WriteString("\n# Project instructions\n\nThese come from instruction files (AGENTS.md, CLAUDE.md) of the user and the project; follow them. A file deeper in the project takes precedence over one above it.\n")
		for _, in := range k.Instructions {
			fmt.Fprintf(&b, "\n## %s", in.Path)
			if in.ImportedBy != "" {
				fmt.Fprintf(&b, " (imported by %s)", in.ImportedBy)
			}
			b.WriteString("\n\n" + strings.TrimSpace(in.Text) + "\n")
		}
	}
	if len(k.Nested) > 0 || len(k.PathRules) > 0 {
		b.WriteString("\n# Folder instructions\n\nThese files apply to work under their folders, or on the files they name, only: read one before you work there.\n")
		for _, n := range k.Nested {
			fmt.Fprintf(&b, "- %s (for %s/)\n", filepath.ToSlash(n.Path), filepath.ToSlash(n.Dir))
		}
		for _, pr := range k.PathRules {
			fmt.Fprintf(&b, "- %s (for files matching %s)\n", filepath.ToSlash(pr.Path), strings.Join(pr.Paths, ", "))
		}
	}
	if len(k.Skills) > 0 {
		b.WriteString("\n# Available skills\n\nWhen a task matches a skill, call the skill tool with its name before you proceed: it returns the skill's instructions and its folder, whose files you may read.\n")
		for _, s := range k.Skills {
			fmt.Fprintf(&b, "- %s: %s\n", s.Name, clipRunes(s.Description, 300))
		}
	}
	return b.String()
}

// clipRunes shortens s to at most n bytes on a rune boundary.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func errorsIsNotExist(err error) bool { return os.IsNotExist(err) }
