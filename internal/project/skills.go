package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Skill is an Agent Skill: a folder holding SKILL.md (YAML front matter
// with name and description, then the body) and any files beside it.
// The prompt lists Name and Description; the skill tool loads Body.
type Skill struct {
	Name        string
	Description string
	// Dir is the skill's folder (absolute); its files are read from there.
	Dir  string
	Path string // SKILL.md
	Body string
	// Source says where it was found: project or user.
	Source string
}

// skillDirs are the folders, under a project or the user's folders, that
// hold skills, in the order they are searched.
var skillDirs = []string{filepath.Join(".arbor", "skills"), filepath.Join(".claude", "skills"), filepath.Join(".agents", "skills")}

// maxSkillFile caps a SKILL.md; a larger one is refused.
const maxSkillFile = 256 << 10

// Limits of the Agent Skills format.
const (
	maxSkillName        = 64
	maxSkillDescription = 1024
)

// skillName matches a skill's name; compiled on first use, as a session
// without skills never needs it.
var skillName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`) })

// ErrSkill marks a SKILL.md that could not be used.
var ErrSkill = errors.New("malformed SKILL.md")

// findSkills reads the skills of the folders roots (each searched for
// skillDirs' subfolders, a skill being a folder holding SKILL.md). The
// first skill of a name wins; a later one of the same name is reported.
func findSkills(roots []skillRoot, fence string, report func(error)) []Skill {
	var out []Skill
	byName := map[string]string{}
	for _, root := range roots {
		entries, err := os.ReadDir(root.dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				report(fmt.Errorf("skills folder %s: %w; skipped", root.dir, err))
			}
			continue
		}
		for _, e := range entries {
			dir := filepath.Join(root.dir, e.Name())
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
			path := filepath.Join(dir, "SKILL.md")
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			f := ""
			if root.source == "project" {
				f = fence
			}
			if err := projectFile(path, f); err != nil {
				report(fmt.Errorf("skill %s: %w; skipped", path, err))
				continue
			}
			s, err := readSkill(path)
			if err != nil {
				report(err)
				continue
			}
			s.Source = root.source
			if prev, ok := byName[s.Name]; ok {
				report(fmt.Errorf("%s: skill %q is also defined by %s, which comes first; this one is skipped", path, s.Name, prev))
				continue
			}
			byName[s.Name] = path
			out = append(out, s)
		}
	}
	return out
}

type skillRoot struct {
	dir, source string
}

// readSkill reads and checks one SKILL.md.
func readSkill(path string) (Skill, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s; skipped", ErrSkill, path, fmt.Sprintf(format, args...))
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Skill{}, bad("%v", err)
	}
	if fi.Size() > maxSkillFile {
		return Skill{}, bad("%d bytes, more than the %d a SKILL.md may have", fi.Size(), maxSkillFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Skill{}, bad("%v", err)
	}
	if !utf8.Valid(b) {
		return Skill{}, bad("not UTF-8 text")
	}
	text := strings.TrimPrefix(strings.ReplaceAll(string(b), "\r\n", "\n"), "\ufeff")
	var fm struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	body := text
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		end := strings.Index(rest, "\n---")
		if end < 0 || !(len(rest) == end+4 || rest[end+4] == '\n') {
			return Skill{}, bad("the front matter has no closing \"---\" line")
		}
		if err := yaml.Unmarshal([]byte(rest[:end]), &fm); err != nil {
			return Skill{}, bad("front matter: %v", err)
		}
		body = strings.TrimLeft(rest[end+4:], "\n")
	}
	// As in Claude Code, the name defaults to the folder's and the
	// description to the body's first line.
	fm.Name, fm.Description = strings.TrimSpace(fm.Name), strings.TrimSpace(fm.Description)
	if fm.Name == "" {
		fm.Name = filepath.Base(filepath.Dir(path))
	}
	if fm.Description == "" {
		fm.Description = firstLine(body)
	}
	switch {
	case len(fm.Name) > maxSkillName || !skillName().MatchString(fm.Name):
		return Skill{}, bad("name %q: use at most %d lower-case letters, digits and single hyphens", fm.Name, maxSkillName)
	case fm.Description == "":
		return Skill{}, bad("no description: give one in the front matter, or a first line of text")
	case len(fm.Description) > maxSkillDescription:
		return Skill{}, bad("description of %d bytes: at most %d", len(fm.Description), maxSkillDescription)
	}
	return Skill{Name: fm.Name, Description: fm.Description, Dir: filepath.Dir(path), Path: path, Body: body}, nil
}

// firstLine is the first line of text that is not blank, without a
// heading's '#'s.
func firstLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(strings.TrimLeft(l, "# ")); l != "" {
			return clipRunes(l, maxSkillDescription)
		}
	}
	return ""
}
