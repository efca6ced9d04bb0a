package permission_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// bundle is one test's workspace, rule files and engine.
type bundle struct {
	root        string // temp dir holding the workspace and an outside dir
	ws          string
	outside     string // a directory next to the workspace
	projectFile string
	userFile    string
	engine      *permission.Engine
}

func setup(t *testing.T, mode permission.Mode) *bundle {
	t.Helper()
	root := t.TempDir()
	b := &bundle{
		root:     root,
		ws:       filepath.Join(root, "ws"),
		outside:  filepath.Join(root, "outside"),
		userFile: filepath.Join(root, "config", "arbor", "permissions.yaml"),
	}
	b.projectFile = permission.DefaultProjectFile(b.ws)
	for _, dir := range []string{b.ws, b.outside} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.engine = b.open(t, mode)
	return b
}

// open builds a new Engine over the bundle's workspace and files.
func (b *bundle) open(t *testing.T, mode permission.Mode) *permission.Engine {
	t.Helper()
	e, err := permission.New(permission.Options{Mode: mode, Workspace: b.ws, ProjectFile: b.projectFile, UserFile: b.userFile})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (b *bundle) add(t *testing.T, spec string, a permission.Action, s permission.Scope) permission.Rule {
	t.Helper()
	r, err := permission.ParseRule(spec, a, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.engine.AddRule(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (b *bundle) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(b.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func shell(cmd string) permission.Request {
	return permission.Request{Tool: "shell", Class: permission.ClassExecute, Command: cmd}
}

func write(paths ...string) permission.Request {
	return permission.Request{Tool: "write_file", Class: permission.ClassWrite, Paths: paths}
}

func read(paths ...string) permission.Request {
	return permission.Request{Tool: "read_file", Class: permission.ClassRead, Paths: paths}
}

func requireAction(t *testing.T, d permission.Decision, want permission.Action) {
	t.Helper()
	if d.Action != want {
		t.Fatalf("action = %s (%s), want %s", d.Action, d.Reason, want)
	}
}
