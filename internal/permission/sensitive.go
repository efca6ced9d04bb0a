package permission

import (
	"path/filepath"
	"slices"
	"strings"
)

// Some files in the workspace are acted on by programs that run with the
// user's rights: arbor reads its rules and settings from .arbor/ and
// .claude/ at its next start and starts .mcp.json's servers, git runs
// .git/hooks and what .git/config names, an editor runs .vscode's tasks,
// a shell its start-up files. An agent that writes one can give itself
// permissions or run a program outside every check, so writing one is
// never allowed by the auto-edit mode nor by a rule without a pattern: it
// asks, as Claude Code asks for its settings and for .git in acceptEdits
// mode. A rule that names the path allows it, and trust mode allows
// everything, as for any write.

// SensitiveDirs are directory names whose contents are sensitive, at any
// depth of the workspace. The sandbox keeps the same names read-only at a
// writable root's top (internal/tool/sandbox, protect.go).
var SensitiveDirs = []string{".arbor", ".claude", ".git", ".vscode", ".idea"}

// SensitiveFiles are file names that are sensitive at any depth.
var SensitiveFiles = []string{".mcp.json", ".gitmodules", ".gitconfig", ".bashrc", ".bash_profile",
	".zshrc", ".zprofile", ".profile", ".ripgreprc"}

// sensitive returns the first of r's forms (as given, and resolved) that
// names a sensitive path inside the workspace, "" when none does.
// Names compare ignoring case, as on a case-insensitive file system.
func (w workspace) sensitive(r resolved) string {
	for _, p := range append([]string{r.abs}, r.reals...) {
		rel, ok := w.rel(p)
		if !ok {
			continue
		}
		parts := strings.Split(strings.ToLower(filepath.ToSlash(rel)), "/")
		for _, part := range parts {
			if slices.Contains(SensitiveDirs, part) {
				return rel
			}
		}
		if slices.Contains(SensitiveFiles, parts[len(parts)-1]) {
			return rel
		}
	}
	return ""
}

// rel is p relative to the workspace root or added directory holding it.
func (w workspace) rel(p string) (string, bool) {
	for _, root := range append([]string{w.abs, w.real}, w.roots...) {
		if within(root, p) {
			rel, err := filepath.Rel(root, p)
			return rel, err == nil && rel != "."
		}
	}
	return "", false
}
