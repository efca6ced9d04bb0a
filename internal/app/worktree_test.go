package app_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/testutil"
)

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	testutil.GitInit(t, dir)
	return dir
}

func TestPrepareWorktree(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	ctx := context.Background()
	wt, err := app.PrepareWorktree(ctx, repo, "feature")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(repo)
	if wt.Branch != "arbor/feature" || wt.Path != filepath.Join(root, ".arbor", "worktrees", "feature") || wt.RepoRoot != root {
		t.Fatalf("worktree %+v", wt)
	}
	if _, err := os.Stat(filepath.Join(wt.Path, ".git")); err != nil {
		t.Fatalf("no checkout at %s: %v", wt.Path, err)
	}
	st := exec.Command("git", "status", "--porcelain")
	st.Dir = repo
	if out, err := st.Output(); err != nil || len(out) != 0 {
		t.Fatalf("the main checkout should stay clean: %q %v", out, err)
	}
	again, err := app.PrepareWorktree(ctx, repo, "feature")
	if err != nil || again != wt {
		t.Fatalf("a second session reuses the worktree: %+v %v", again, err)
	}
	if auto, err := app.PrepareWorktree(ctx, repo, ""); err != nil || auto.Name == "" {
		t.Fatalf("an unnamed worktree gets a name: %+v %v", auto, err)
	}
	if _, err := app.PrepareWorktree(ctx, repo, "../escape"); err == nil {
		t.Fatal("a name with a path must be refused")
	}
	if _, err := app.PrepareWorktree(ctx, t.TempDir(), "x"); !errors.Is(err, app.ErrNotARepo) {
		t.Fatalf("outside a repository: %v", err)
	}
	file := filepath.Join(repo, "README")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := app.PrepareWorktree(ctx, file, "x"); !errors.Is(err, app.ErrUsage) || !strings.Contains(err.Error(), file+" is not a directory") {
		t.Fatalf("in a file (-C FILE -w): %v", err)
	}
}
