package project

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Command is a custom slash command: a Markdown file whose body is the
// prompt, "$ARGUMENTS" standing for what follows the command ($0, $1, …
// or $ARGUMENTS[0], … for its words).
type Command struct {
	Name        string // "review", or "frontend:lint" for frontend/lint.md
	Description string
	ArgHint     string
	Path        string
	Body        string
}

// commandDirs are the folders, under a project or the user's folders,
// that hold commands, in the order they are searched.
var commandDirs = []string{filepath.Join(".arbor", "commands"), filepath.Join(".claude", "commands")}

// maxCommandFile caps a command file; a larger one is refused.
const maxCommandFile = 256 << 10

// Expand is the command's prompt for args: Claude Code's placeholders
// filled (see expandArguments).
func (c Command) Expand(args string) string { return expandArguments(c.Body, args, true) }

// findCommands reads the commands of roots; the first of a name wins.
func findCommands(roots []string, fence string, report func(error)) []Command {
	var out []Command
	seen := map[string]bool{}
	for _, root := range roots {
		f := "" // a user's folder may hold links anywhere
		if real, err := filepath.EvalSymlinks(root); err == nil && inside(fence, real) {
			f = fence
		}
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					report(fmt.Errorf("commands folder %s: %w; skipped", p, err))
				}
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				if strings.Count(rel, string(filepath.Separator)) >= 1 {
					return filepath.SkipDir // one level of namespaces
				}
				return nil
			}
			if !strings.HasSuffix(d.Name(), ".md") {
				return nil
			}
			name := strings.ReplaceAll(strings.TrimSuffix(rel, ".md"), string(filepath.Separator), ":")
			if seen[name] {
				return nil
			}
			if err := projectFile(p, f); err != nil {
				report(fmt.Errorf("command %s: %w; skipped", p, err))
				return nil
			}
			c, err := readCommand(p, name)
			if err != nil {
				report(err)
				return nil
			}
			seen[name] = true
			out = append(out, c)
			return nil
		})
	}
	return out
}

func readCommand(path, name string) (Command, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w; skipped", path, err)
	}
	if fi.Size() > maxCommandFile {
		return Command{}, fmt.Errorf("command %s: %d bytes, more than the %d a command file may have; skipped", path, fi.Size(), maxCommandFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Command{}, fmt.Errorf("command %s: %w; skipped", path, err)
	}
	body := strings.ReplaceAll(string(b), "\r\n", "\n")
	c := Command{Name: name, Path: path}
	if rest, ok := strings.CutPrefix(body, "---\n"); ok {
		end := strings.Index(rest, "\n---")
		if end < 0 {
			return Command{}, fmt.Errorf("command %s: the front matter has no closing \"---\" line; skipped", path)
		}
		var fm struct {
			Description string `yaml:"description"`
			ArgHint     string `yaml:"argument-hint"`
		}
		if err := yaml.Unmarshal([]byte(rest[:end]), &fm); err != nil {
			return Command{}, fmt.Errorf("command %s: front matter: %w; skipped", path, err)
		}
		c.Description, c.ArgHint = fm.Description, fm.ArgHint
		body = strings.TrimLeft(rest[end+4:], "\n")
	}
	c.Body = strings.TrimSpace(body)
	if c.Description == "" {
		first, _, _ := strings.Cut(c.Body, "\n")
		c.Description = clipRunes(strings.TrimLeft(first, "# "), 100)
	}
	return c, nil
}
