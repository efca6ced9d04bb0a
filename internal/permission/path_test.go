package permission_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

func TestResolvePath(t *testing.T) {
	t.Parallel()
	b := setup(t, permission.ModeDefault)
	b.write(t, "ws/src/a.go", "package a")
	b.write(t, "outside/secret", "x")
	if err := os.Mkdir(filepath.Join(b.outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, b.outside, filepath.Join(b.ws, "out"))
	symlink(t, filepath.Join(b.outside, "sub"), filepath.Join(b.ws, "deep"))
	symlink(t, "src", filepath.Join(b.ws, "srclink"))
	symlink(t, "loop2", filepath.Join(b.ws, "loop1"))
	symlink(t, "loop1", filepath.Join(b.ws, "loop2"))

	tests := []struct {
		name, in, abs string
		inside        bool
	}{
		{"relative", "src/a.go", b.ws + "/src/a.go", true},
		{"absolute inside", b.ws + "/src/a.go", b.ws + "/src/a.go", true},
		{"workspace itself", ".", b.ws, true},
		{"empty is the workspace", "", b.ws, true},
		{"parent escape", "../x", b.root + "/x", false},
		{"absolute outside", "/etc/passwd", "/etc/passwd", false},
		{"symlink out", "out/secret", b.outside + "/secret", false},
		{"relative symlink in", "srclink/a.go", b.ws + "/src/a.go", true},
		{"new file in new folders", "new/dir/f.txt", b.ws + "/new/dir/f.txt", true},
		{"new file under a symlink out", "out/new/f.txt", b.outside + "/new/f.txt", false},
		{"dot-dot after a symlink climbs its target", "deep/../secret", b.outside + "/secret", false},
		{"dot-dot inside", "src/../src/a.go", b.ws + "/src/a.go", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			abs, inside, err := permission.ResolvePath(b.ws, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if abs != tt.abs || inside != tt.inside {
				t.Fatalf("ResolvePath(%q) = %s, %v; want %s, %v", tt.in, abs, inside, tt.abs, tt.inside)
			}
		})
	}
	t.Run("symlink loop", func(t *testing.T) {
		t.Parallel()
		_, _, err := permission.ResolvePath(b.ws, "loop1/x")
		if !errors.Is(err, permission.ErrTooManyLinks) {
			t.Fatalf("err = %v, want ErrTooManyLinks", err)
		}
	})
	t.Run("symlinked workspace", func(t *testing.T) {
		t.Parallel()
		link := filepath.Join(b.root, "wslink")
		symlink(t, b.ws, link)
		abs, inside, err := permission.ResolvePath(link, "src/a.go")
		if err != nil || !inside || abs != b.ws+"/src/a.go" {
			t.Fatalf("ResolvePath via symlinked workspace = %s, %v, %v", abs, inside, err)
		}
	})
}

func TestDecideWorkspaceConfinement(t *testing.T) {
	t.Parallel()
	setupEscapes := func(t *testing.T, mode permission.Mode) *bundle {
		b := setup(t, mode)
		b.write(t, "outside/secret", "x")
		symlink(t, b.outside, filepath.Join(b.ws, "out"))
		return b
	}
	denied := []struct {
		name, path, mention string
	}{
		{"parent", "../x", `"../x"`},
		{"absolute", "/etc/passwd", "/etc/passwd"},
		{"symlink pointing out", "out/secret", "outside/secret"},
		{"new file below a symlink pointing out", "out/new.txt", "outside/new.txt"},
	}
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeAutoEdit, permission.ModeTrust} {
		for _, tt := range denied {
			t.Run(string(mode)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				b := setupEscapes(t, mode)
				for _, req := range []permission.Request{read(tt.path), write(tt.path)} {
					d := b.engine.Decide(req)
					requireAction(t, d, deny)
					if !strings.Contains(d.Reason, tt.mention) || !strings.Contains(d.Reason, "outside the workspace") {
						t.Fatalf("reason %q does not name %s", d.Reason, tt.mention)
					}
				}
			})
		}
	}
	t.Run("paths inside are fine", func(t *testing.T) {
		t.Parallel()
		b := setupEscapes(t, permission.ModeAutoEdit)
		for _, p := range []string{b.ws + "/a.txt", "new/sub/dir/file.txt", "x/../y.txt", "."} {
			requireAction(t, b.engine.Decide(write(p)), allow)
		}
	})
	t.Run("symlinked workspace root", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeAutoEdit)
		link := filepath.Join(b.root, "wslink")
		symlink(t, b.ws, link)
		e, err := permission.New(permission.Options{Mode: permission.ModeAutoEdit, Workspace: link})
		if err != nil {
			t.Fatal(err)
		}
		if e.Workspace() != link {
			t.Fatalf("Workspace() = %s, want %s", e.Workspace(), link)
		}
		for _, p := range []string{"a.txt", link + "/a.txt", b.ws + "/a.txt"} {
			requireAction(t, e.Decide(write(p)), allow)
		}
		requireAction(t, e.Decide(write("../outside/a.txt")), deny)
	})
	t.Run("an allow rule naming the outside path lets it through", func(t *testing.T) {
		t.Parallel()
		b := setupEscapes(t, permission.ModeDefault)
		b.add(t, "read_file("+b.outside+"/**)", allow, permission.ScopeProject)
		requireAction(t, b.engine.Decide(read(b.outside+"/secret")), allow)
		requireAction(t, b.engine.Decide(read("out/secret")), allow)
		requireAction(t, b.engine.Decide(read("../outside/secret")), allow)
		requireAction(t, b.engine.Decide(write(b.outside+"/secret")), deny)
	})
	t.Run("only patterns naming the path count", func(t *testing.T) {
		t.Parallel()
		b := setupEscapes(t, permission.ModeDefault)
		b.add(t, "write_file", allow, permission.ScopeSession)
		b.add(t, "write_file(**)", allow, permission.ScopeSession)
		b.add(t, "write_file(out/**)", allow, permission.ScopeSession)
		b.add(t, "read_file("+b.outside+"/**)", ask, permission.ScopeSession)
		requireAction(t, b.engine.Decide(write("out/secret")), deny)
		requireAction(t, b.engine.Decide(write(b.outside+"/secret")), deny)
		requireAction(t, b.engine.Decide(read(b.outside+"/secret")), deny)
		requireAction(t, b.engine.Decide(write("in/side.txt")), allow)
	})
	t.Run("deny rules see through symlinks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeTrust)
		b.write(t, "ws/secrets/key", "k")
		symlink(t, "secrets", filepath.Join(b.ws, "innocent"))
		b.add(t, "read_file(secrets/**)", deny, permission.ScopeUser)
		requireAction(t, b.engine.Decide(read("innocent/key")), deny)
		requireAction(t, b.engine.Decide(read(b.ws+"/secrets/key")), deny)
		requireAction(t, b.engine.Decide(read("other")), allow)
	})
}

// TestDecideRoots: a directory added as a root (--add-dir) is inside like
// the workspace: reads and writes there follow the mode, and a root that
// does not exist is refused when the engine is built.
func TestDecideRoots(t *testing.T) {
	t.Parallel()
	b := setup(t, permission.ModeAutoEdit)
	e, err := permission.New(permission.Options{Mode: permission.ModeAutoEdit, Workspace: b.ws, Roots: []string{b.outside}})
	if err != nil {
		t.Fatal(err)
	}
	requireAction(t, e.Decide(write(filepath.Join(b.outside, "new.txt"))), allow)
	requireAction(t, e.Decide(read(filepath.Join(b.outside, "secret"))), allow)
	requireAction(t, e.Decide(write(filepath.Join(b.root, "elsewhere.txt"))), deny)
	// Without the root, the same write is outside.
	requireAction(t, b.engine.Decide(write(filepath.Join(b.outside, "new.txt"))), deny)
	if _, err := permission.New(permission.Options{Workspace: b.ws, Roots: []string{filepath.Join(b.root, "missing")}}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("a missing root: err = %v, want one naming it", err)
	}
}
