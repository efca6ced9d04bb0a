package project_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/project"
	"github.com/arbor-run/arbor/internal/tool"
)

// tree writes files (path → content) under root.
func tree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func problemsText(k *project.Knowledge) string {
	var s []string
	for _, p := range k.Problems {
		s = append(s, p.Error())
	}
	return strings.Join(s, "\n")
}

func TestInstructions(t *testing.T) {
	t.Parallel()
	root, user := t.TempDir(), t.TempDir()
	tree(t, root, map[string]string{
		".git/HEAD":             "ref: refs/heads/main\n",
		"AGENTS.md":             "Root rule: use tabs.\n",
		"svc/CLAUDE.md":         "Service rule. See @docs/style.md and `@not/an/import.md`.\n```\n@fenced.md\n```\n",
		"svc/docs/style.md":     "Imported style: short names.\n",
		"svc/fenced.md":         "MUST NOT APPEAR\n",
		"svc/api/AGENTS.md":     "API rule.\n",
		"svc/.hidden/CLAUDE.md": "hidden\n",
	})
	tree(t, user, map[string]string{"AGENTS.md": "User rule: answer in English.\n"})
	k := project.Load(project.Options{Workspace: filepath.Join(root, "svc"), UserDir: user})
	if len(k.Problems) != 0 {
		t.Fatalf("problems: %v", k.Problems)
	}
	var got []string
	for _, in := range k.Instructions {
		rel, _ := filepath.Rel(root, in.Path)
		if strings.HasPrefix(in.Path, user) {
			rel = "USER/" + filepath.Base(in.Path)
		}
		got = append(got, rel)
	}
	if want := "USER/AGENTS.md AGENTS.md svc/CLAUDE.md svc/docs/style.md"; strings.Join(got, " ") != want {
		t.Fatalf("instructions %v; want %s", got, want)
	}
	p := k.Prompt()
	for _, w := range []string{"User rule: answer in English.", "Root rule: use tabs.", "Service rule.", "Imported style: short names.", "(imported by " + filepath.Join(root, "svc", "CLAUDE.md") + ")", "- api/AGENTS.md (for api/)"} {
		if !strings.Contains(p, w) {
			t.Errorf("the prompt lacks %q:\n%s", w, p)
		}
	}
	if strings.Contains(p, "MUST NOT APPEAR") || strings.Contains(p, "hidden") {
		t.Errorf("a fenced import or a hidden folder reached the prompt:\n%s", p)
	}
	if strings.Index(p, "Root rule") > strings.Index(p, "Service rule") {
		t.Error("the root's file must come before the nested one")
	}
}

func TestInstructionsCap(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	big := strings.Repeat("Be careful with the database.\n", 5<<20/29+1) // > 5 MB
	tree(t, ws, map[string]string{"AGENTS.md": big, "CLAUDE.md": "Second file.\n"})
	k := project.Load(project.Options{Workspace: ws})
	if n := len(k.Instructions); n != 1 {
		t.Fatalf("%d instruction files; want the capped AGENTS.md alone", n)
	}
	text := k.Instructions[0].Text
	if len(text) > project.DefaultMaxInstructions+300 || !strings.Contains(text, "is left out: instruction files are capped at 65536 bytes") {
		t.Fatalf("text of %d bytes, ending %q", len(text), text[len(text)-200:])
	}
	pr := problemsText(k)
	if !strings.Contains(pr, filepath.Join(ws, "AGENTS.md")+" is "+itoa(len(big))+" bytes") || !strings.Contains(pr, "CLAUDE.md: left out: the instruction files before it filled the cap") {
		t.Fatalf("problems %q; want the cut and the left-out file named", pr)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestSkills(t *testing.T) {
	t.Parallel()
	ws, user := t.TempDir(), t.TempDir()
	tree(t, ws, map[string]string{
		".claude/skills/release/SKILL.md":           "---\nname: release\ndescription: Cut a release of the service.\n---\n# Release\nRun scripts/release.sh with $ARGUMENTS.\n",
		".claude/skills/release/scripts/release.sh": "echo release\n",
		// As in Claude Code, a skill without front matter, or without a
		// name or description in it, is named after its folder and
		// described by its first line.
		".agents/skills/nofm/SKILL.md":   "# Just a body\nno front matter here\n",
		".arbor/skills/nodesc/SKILL.md":  "---\nname: nodesc\n---\nbody\n",
		".arbor/skills/empty/SKILL.md":   "---\nname: empty\n---\n\n",
		".arbor/skills/BadName/SKILL.md": "---\nname: Bad_Name\ndescription: x\n---\nbody\n",
		".arbor/skills/broken/SKILL.md":  "---\nname: [unclosed\ndescription: x\n---\n",
	})
	tree(t, user, map[string]string{
		"skills/release/SKILL.md": "---\nname: release\ndescription: the user's, shadowed\n---\nuser body\n",
		"skills/notes/SKILL.md":   "---\nname: notes\ndescription: Write release notes.\n---\nNotes body.\n",
	})
	k := project.Load(project.Options{Workspace: ws, UserDir: user})
	var names []string
	for _, s := range k.Skills {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "nodesc,release,nofm,notes" {
		t.Fatalf("skills %v", names)
	}
	pr := problemsText(k)
	for _, w := range []string{
		filepath.Join(ws, ".arbor/skills/empty/SKILL.md") + ": no description",
		`name "Bad_Name": use at most 64 lower-case letters`,
		filepath.Join(ws, ".arbor/skills/broken/SKILL.md") + ": front matter: yaml",
		`skill "release" is also defined by ` + filepath.Join(ws, ".claude/skills/release/SKILL.md"),
	} {
		if !strings.Contains(pr, w) {
			t.Errorf("problems lack %q:\n%s", w, pr)
		}
	}
	for _, p := range k.Problems {
		if strings.Contains(p.Error(), "SKILL.md:") && !errors.Is(p, project.ErrSkill) && !strings.Contains(p.Error(), "also defined") {
			t.Errorf("%v does not wrap ErrSkill", p)
		}
	}
	p := k.Prompt()
	if !strings.Contains(p, "- release: Cut a release of the service.") || strings.Contains(p, "Run scripts/release.sh") ||
		!strings.Contains(p, "- nofm: Just a body") || !strings.Contains(p, "- nodesc: body") {
		t.Fatalf("the prompt must list names and descriptions only:\n%s", p)
	}
	st := project.SkillTool(k)
	for _, in := range []string{`{"name":"release","args":"v1.2"}`, `{"skill":"release","args":"v1.2"}`} {
		res := st.Run(t.Context(), tool.Call{ID: "s1", Input: json.RawMessage(in)})
		if res.IsError || !strings.Contains(res.Content, "Run scripts/release.sh with v1.2.") || !strings.Contains(res.Content, "<root>"+filepath.Join(ws, ".claude/skills/release")+"</root>") {
			t.Fatalf("skill(%s) = %+v", in, res)
		}
	}
	if res := st.Run(t.Context(), tool.Call{ID: "s2", Input: json.RawMessage(`{"name":"nope"}`)}); !res.IsError || !strings.Contains(res.Content, "the skills are nodesc, release, nofm, notes") {
		t.Fatalf("unknown skill: %+v", res)
	}
	rules := k.SkillReadRules()
	if len(rules) != 5 || rules[0].String() != "read_file("+filepath.ToSlash(filepath.Join(user, "skills/notes"))+"/**)" {
		t.Fatalf("read rules %v; want the user's skill folder readable by the five reading tools", rules)
	}
	if project.SkillTool(&project.Knowledge{}) != nil {
		t.Fatal("a skill tool without skills")
	}
}

func TestMapRule(t *testing.T) {
	t.Parallel()
	root := "/p"
	for _, c := range []struct{ in, want string }{
		{"Bash(npm run test:*)", "shell(npm run test *)"},
		{"Bash", "shell"},
		{"Bash(git push origin main)", "shell(git push origin main)"},
		// A pattern that names a folder covers what is in it (gitignore's
		// rule, Claude Code's matching): each stands as p and p/**.
		{"Read(./.env)", "read_file(.env) read_file(.env/**) view_image(.env) view_image(.env/**) grep(.env) grep(.env/**) glob(.env) glob(.env/**) list_directory(.env) list_directory(.env/**)"},
		{"Grep(*.env)", "grep(*.env) grep(*.env/**) grep(**/*.env) grep(**/*.env/**)"},
		{"Grep(secrets/)", "grep(secrets) grep(secrets/**) grep(**/secrets) grep(**/secrets/**)"},
		{"Grep(./secrets/)", "grep(secrets) grep(secrets/**)"},
		{"Grep(/docs)", "grep(docs) grep(docs/**)"},
		{"Edit(src/**)", "edit(src/**) write_file(src/**) apply_patch(src/**) delete(src/**)"},
		{"Edit(/docs/**)", "edit(docs/**) write_file(docs/**) apply_patch(docs/**) delete(docs/**)"},
		{"Write(//tmp/out/**)", "write_file(/tmp/out/**)"},
		{"Write(//etc/hosts)", "write_file(/etc/hosts) write_file(/etc/hosts/**)"},
		{"Read(~/.ssh/**)", "read_file(~/.ssh/**) view_image(~/.ssh/**) grep(~/.ssh/**) glob(~/.ssh/**) list_directory(~/.ssh/**)"},
		{"mcp__github__create_issue", "mcp__github__create_issue"},
		{"mcp__github", "mcp__github"},
		{"Grep", "grep"},
	} {
		got, err := project.MapRule(c.in, root, root)
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("MapRule(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
		for _, g := range got {
			if _, err := permission.ParseRule(g, permission.Deny, permission.ScopeProject); err != nil {
				t.Errorf("MapRule(%q) gave %q, which arbor refuses: %v", c.in, g, err)
			}
		}
	}
	for _, c := range []struct{ in, want string }{
		{"WebFetch(domain:example.com)", "web_fetch(domain:example.com)"}, {"WebFetch", "web_fetch"},
		{"WebFetch(domain:*.example.com)", "web_fetch(domain:*.example.com)"},
	} {
		if got, err := project.MapRule(c.in, root, root); err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("MapRule(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"WebFetch(https://x)", "WebSearch", "NotebookEdit", "Task(x)", "mcp__s__t(x)"} {
		if _, err := project.MapRule(in, root, root); !errors.Is(err, project.ErrUnmappable) {
			t.Errorf("MapRule(%q) err = %v; want ErrUnmappable", in, err)
		}
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	ws, user := t.TempDir(), t.TempDir()
	tree(t, ws, map[string]string{
		".claude/settings.json": `{"permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)", "WebFetch(domain:example.com)", "WebSearch"]},
			"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}`,
		".claude/settings.local.json": `{"permissions": {"ask": ["Bash(git push:*)"]}}`,
		".arbor/settings.json":        `{not json`,
	})
	tree(t, user, map[string]string{"settings.json": `{"permissions": {"deny": ["Bash(rm -rf:*)"]}}`})
	k := project.Load(project.Options{Workspace: ws, UserDir: user})
	var got []string
	for _, r := range k.Rules {
		got = append(got, string(r.Action)+":"+r.String()+":"+string(r.Scope))
	}
	want := "ask:shell(git push *):project deny:read_file(.env):project deny:read_file(.env/**):project deny:view_image(.env):project deny:view_image(.env/**):project deny:grep(.env):project deny:grep(.env/**):project deny:glob(.env):project deny:glob(.env/**):project deny:list_directory(.env):project deny:list_directory(.env/**):project deny:web_fetch(domain:example.com):project allow:shell(npm run test *):project deny:shell(rm -rf *):user"
	if strings.Join(got, " ") != want {
		t.Fatalf("rules\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if len(k.Hooks) != 1 || k.Hooks[0].Source != filepath.Join(ws, ".claude/settings.json") {
		t.Fatalf("hooks %+v", k.Hooks)
	}
	pr := problemsText(k)
	for _, w := range []string{`permissions.deny rule "WebSearch": no arbor equivalent: arbor has no WebSearch tool`, filepath.Join(ws, ".arbor/settings.json") + ": line 1, column 2: invalid character"} {
		if !strings.Contains(pr, w) {
			t.Errorf("problems lack %q:\n%s", w, pr)
		}
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tree(t, ws, map[string]string{
		".claude/commands/review.md":        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS carefully; start with $1.\n",
		".arbor/commands/review.md":         "arbor's own review: $ARGUMENTS\n",
		".claude/commands/frontend/lint.md": "# Lint the frontend\nRun the linter.\n",
		".claude/commands/bad.md":           "---\ndescription: x\nno end\n",
	})
	k := project.Load(project.Options{Workspace: ws})
	var names []string
	for _, c := range k.Commands {
		names = append(names, c.Name+"="+c.Description)
	}
	if strings.Join(names, "|") != "review=arbor's own review: $ARGUMENTS|frontend:lint=Lint the frontend" {
		t.Fatalf("commands %v", names)
	}
	if !strings.Contains(problemsText(k), "bad.md: the front matter has no closing") {
		t.Fatalf("problems %v", k.Problems)
	}
	c, _ := k.Command("review")
	if got := c.Expand("a.go b.go"); got != "arbor's own review: a.go b.go" {
		t.Fatal(got)
	}
	l, _ := k.Command("frontend:lint")
	if got := l.Expand("--fix"); got != "# Lint the frontend\nRun the linter.\n\nARGUMENTS: --fix" {
		t.Fatal(got)
	}
}

// TestSources: Claude Code's --setting-sources picks what is read.
func TestSources(t *testing.T) {
	t.Parallel()
	ws, user := t.TempDir(), t.TempDir()
	tree(t, ws, map[string]string{
		"CLAUDE.md":                   "project rule\n",
		"CLAUDE.local.md":             "local rule\n",
		".claude/settings.json":       `{"permissions": {"deny": ["Bash(rm:*)"]}}`,
		".claude/settings.local.json": `{"permissions": {"deny": ["Bash(curl:*)"]}}`,
		".claude/skills/p/SKILL.md":   "---\nname: p\ndescription: project skill\n---\n",
	})
	tree(t, user, map[string]string{"AGENTS.md": "user rule\n", "skills/u/SKILL.md": "---\nname: u\ndescription: user skill\n---\n"})
	for _, c := range []struct {
		sources []string
		want    string
	}{
		{nil, "user rule|project rule|local rule|skills p,u|rules shell(curl *),shell(rm *)"},
		{[]string{}, "skills |rules "},
		{[]string{"user"}, "user rule|skills u|rules "},
		{[]string{"project"}, "project rule|skills p|rules shell(rm *)"},
		{[]string{"local"}, "local rule|skills |rules shell(curl *)"},
	} {
		k := project.Load(project.Options{Workspace: ws, UserDir: user, Sources: c.sources})
		var parts, skills, rules []string
		for _, in := range k.Instructions {
			parts = append(parts, strings.TrimSpace(in.Text))
		}
		for _, s := range k.Skills {
			skills = append(skills, s.Name)
		}
		for _, r := range k.Rules {
			rules = append(rules, r.String())
		}
		got := strings.Join(append(parts, "skills "+strings.Join(skills, ","), "rules "+strings.Join(rules, ",")), "|")
		if got != c.want {
			t.Errorf("sources %v: %s, want %s", c.sources, got, c.want)
		}
	}
}

// TestSettingsMisspeltKeys: a key of permissions arbor does not read
// ("dney") and a top-level key that looks like a misspelt "permissions"
// are reported, naming the file and the key, and their rules are not
// used; Claude Code's own keys are not reported. Before, both were
// ignored without a word, and their deny rules were lost.
func TestSettingsMisspeltKeys(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tree(t, ws, map[string]string{
		".claude/settings.json": `{"permissions": {"dney": ["Bash(touch:*)"], "deny": ["Bash(rm:*)"], "defaultMode": "acceptEdits",
			"additionalDirectories": ["../x"]}, "model": "opus", "env": {}}`,
		".claude/settings.local.json": `{"permission": {"deny": ["Bash(touch:*)"]}, "Hooks": {}}`,
	})
	k := project.Load(project.Options{Workspace: ws, UserDir: t.TempDir()})
	if len(k.Rules) != 1 || k.Rules[0].String() != "shell(rm *)" {
		t.Fatalf("rules %v; want the deny list's only", k.Rules)
	}
	settings, local := filepath.Join(ws, ".claude/settings.json"), filepath.Join(ws, ".claude/settings.local.json")
	want := []string{
		local + ": Hooks: not a settings key arbor reads (did you mean hooks?); left out (the rest of the file is used)",
		local + ": permission: not a settings key arbor reads (did you mean permissions?); left out (the rest of the file is used)",
		settings + ": permissions.dney: not a key of permissions: arbor reads allow, ask, deny (did you mean deny?); left out (the rest of the file is used)",
	}
	if got := problemsText(k); got != strings.Join(want, "\n") {
		t.Fatalf("problems\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}
