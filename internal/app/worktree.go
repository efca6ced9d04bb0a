package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Worktree is a git worktree that arbor created (or reuses) for a session,
// so the agent works on its own branch beside the user's checkout.
type Worktree struct {
	Name     string `json:"name"`
	Branch   string `json:"branch"`
	Path     string `json:"path"`
	RepoRoot string `json:"repo_root"`
}

// ErrNotARepo: -w was asked for outside a git repository.
var ErrNotARepo = errors.New("not inside a git repository")

// worktreeName is compiled on first use: its bounded repetition makes a
// 60 KB program, which every start (a thousand headless sessions) would
// build for nothing.
var worktreeName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
})

// PrepareWorktree returns the worktree NAME of the repository containing
// dir, creating it (on a new branch arbor/NAME) under
// <repo>/.arbor/worktrees/NAME when it does not exist yet. An empty name
// gets a fresh one.
func PrepareWorktree(ctx context.Context, dir, name string) (Worktree, error) {
	if name == "" {
		name = "wt-" + NewID()
	}
	if !worktreeName().MatchString(name) {
		return Worktree{}, fmt.Errorf("worktree name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	if err := checkWorkspace(dir); err != nil {
		return Worktree{}, err
	}
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return Worktree{}, fmt.Errorf("worktree %s: %w (%v)", name, ErrNotARepo, err)
	}
	wt := Worktree{Name: name, Branch: "arbor/" + name, RepoRoot: root,
		Path: filepath.Join(root, ".arbor", "worktrees", name)}
	if fi, err := os.Stat(wt.Path); err == nil && fi.IsDir() {
		return wt, nil // created by an earlier session: reuse it
	}
	if err := os.MkdirAll(filepath.Dir(wt.Path), 0o755); err != nil {
		return Worktree{}, fmt.Errorf("worktree %s: %w", name, err)
	}
	args := []string{"worktree", "add", "-b", wt.Branch, wt.Path}
	if _, err := git(ctx, root, "rev-parse", "--verify", "--quiet", "refs/heads/"+wt.Branch); err == nil {
		args = []string{"worktree", "add", wt.Path, wt.Branch} // the branch outlived its worktree
	}
	if _, err := git(ctx, root, args...); err != nil {
		return Worktree{}, fmt.Errorf("worktree %s: %w", name, err)
	}
	if err := excludeWorktrees(ctx, root); err != nil {
		return Worktree{}, fmt.Errorf("worktree %s: %w", name, err)
	}
	return wt, nil
}

// excludeWorktrees keeps .arbor/worktrees/ out of the main checkout's
// status, through the repository's info/exclude (never a tracked file).
func excludeWorktrees(ctx context.Context, root string) error {
	common, err := git(ctx, root, "rev-parse", "--git-common-dir")
	if err != nil {
		return err
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(root, common)
	}
	path := filepath.Join(common, "info", "exclude")
	const line = "/.arbor/worktrees/"
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	entry := line + "\n"
	if len(b) > 0 && !strings.HasSuffix(string(b), "\n") {
		entry = "\n" + entry
	}
	_, err = f.WriteString(entry)
	return err
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
