package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NPMPackage installs the npm project in src (its package.json and
// package-lock.json, committed beside the test) outside the source tree and
// returns a fresh directory holding src's other files and a node_modules
// link to the installed packages, ready for `node script.mjs`.
//
// Installs are cached under the user cache directory (ARBOR_TEST_CACHE
// overrides it), keyed by the lock file's hash, so a second run installs
// nothing and the source tree never gets a node_modules. Concurrent test
// processes install into temporary directories and rename the first
// complete one into place. npmArgs are added to `npm ci`.
func NPMPackage(t *testing.T, src string, npmArgs ...string) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found in PATH: this test needs Node.js 20 or later with npm; run `bash scripts/test.sh`, which installs them (or apt-get install nodejs npm where the distribution's nodejs is 20 or later)", tool)
		}
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatalf("npm project %s: %v", src, err)
	}
	sum := sha256.Sum256(append(lock, strings.Join(npmArgs, " ")...))
	root := os.Getenv("ARBOR_TEST_CACHE")
	if root == "" {
		if root, err = os.UserCacheDir(); err != nil {
			root = os.TempDir()
		}
		root = filepath.Join(root, "arbor-test")
	}
	installed := filepath.Join(root, "npm", filepath.Base(src)+"-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(installed, "node_modules")); err != nil {
		npmInstall(t, src, installed, npmArgs)
	}

	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == ".gitignore" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(installed, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func npmInstall(t *testing.T, src, installed string, npmArgs []string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(installed), ".install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"ci", "--no-audit", "--no-fund"}, npmArgs...)
	c := exec.Command("npm", args...)
	c.Dir = tmp
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("npm %s (for %s): %v\n%s", strings.Join(args, " "), src, err, out)
	}
	if err := os.Rename(tmp, installed); err != nil {
		// Another process may have renamed its install first: use that one.
		if _, statErr := os.Stat(filepath.Join(installed, "node_modules")); statErr != nil {
			t.Fatalf("install npm packages for %s: %v", src, err)
		}
	}
}
