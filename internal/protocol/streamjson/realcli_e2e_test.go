//go:build unix

package streamjson_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/arbor-run/arbor/internal/testutil"
)

// realClaudeCode installs the real Claude Code CLI (pinned in
// testdata/claude-code) and returns its native binary, which the SDK runs
// directly (the npm wrapper needs a postinstall step the test skips). Only
// TestClaudeCodeGoldens uses it, when it records (ARBOR_RECORD_CLAUDE_CODE=1).
func realClaudeCode(t *testing.T) string {
	t.Helper()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "claude-code"))
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	bin := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+arch, "claude")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the Claude Code binary for %s/%s is not installed: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	return bin
}
