package project

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"
)

// PathRule is a rules file (Claude Code's .claude/rules/*.md) whose front
// matter names the files it is for ("paths"): the prompt lists it, with
// its patterns, rather than including it, as Claude Code loads it only
// when such files are worked on.
type PathRule struct {
	Path  string   // absolute
	Paths []string // its patterns, as written
}

// maxRulesFiles bounds the files read from one rules folder.
const maxRulesFiles = 200

// readRules reads the rules folder dir (Claude Code's .claude/rules, and
// its folders, in name order): a file without "paths" in its front
// matter is an instruction file, read as one (imports, cap); a file with
// them is returned, for the prompt to list.
//
// fenced says the folder is the project's: a file in it that resolves
// outside the project is skipped and reported, as an instruction file is.
func (r *instructionReader) readRules(dir, appliesTo string, fenced bool) []PathRule {
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && p != dir && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(d.Name(), ".md") && len(files) < maxRulesFiles:
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	var out []PathRule
	for _, f := range files {
		if real, err := filepath.EvalSymlinks(f); err == nil && fenced && !inside(r.fence, real) {
			r.report(fmt.Errorf("%s resolves to %s, outside the project %s; a project's rules files are read only inside it; skipped", f, real, r.fence))
			continue
		}
		if paths := rulePaths(f); len(paths) > 0 {
			out = append(out, PathRule{Path: f, Paths: paths})
			continue
		}
		r.readFile(f, appliesTo, "", 0, fenced)
	}
	return out
}

// rulePaths is the "paths" of a rules file's front matter: a list, or
// one string of patterns separated by commas; nil without them (or
// when the front matter does not parse: the file is then read whole).
func rulePaths(path string) []string {
	// Not blocking, and a regular file only: a FIFO must not hang the start.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil // readFile reports it
	}
	head := make([]byte, 16<<10)
	n, _ := f.Read(head)
	text := strings.ReplaceAll(string(head[:n]), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return nil
	}
	end := strings.Index(rest, "\n---")
	if end < 0 {
		return nil
	}
	var fm struct {
		Paths any `yaml:"paths"`
	}
	if yaml.Unmarshal([]byte(rest[:end]), &fm) != nil {
		return nil
	}
	var out []string
	add := func(s string) {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	switch v := fm.Paths.(type) {
	case string:
		add(v)
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	}
	return out
}
