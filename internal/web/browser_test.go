package web_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
	"github.com/arbor-run/arbor/internal/web"
)

// chromiumPath finds Debian's chromium (scripts/test.sh installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("chromium not found: this test drives the pages in Debian's chromium; run `bash scripts/test.sh`, which installs it (or apt-get install chromium), or set CHROMIUM to its path")
	return ""
}

// TestBrowserSteersRun opens a running scripted tree in chromium through
// playwright-core and, from the page: sees node states change live,
// answers an ask and sees its dependent start, approves a write, and
// stops a node. Screenshots go to $ARBOR_TEST_ARTIFACTS (or the test's
// temporary directory).
func TestBrowserSteersRun(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "browser"))
	artifacts := os.Getenv("ARBOR_TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	} else {
		artifacts = filepath.Join(artifacts, t.Name())
		if err := os.MkdirAll(artifacts, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := setup(t, treetest.Script{
		1: {
			calls(
				call("spawn", map[string]any{"goal": "Write the report", "prompt": "Write report.txt."}),
				call("ask", map[string]any{"question": "How many users?", "options": []any{"<1K", "10K-100K"}}),
				call("fork", map[string]any{"goal": "Size the cluster", "prompt": "Use the answer.", "blocked_by": []any{"#3"}}),
				call("spawn", map[string]any{"goal": "Wait forever", "prompt": "Ask and wait."})),
			complete("draft"),
			complete("FINAL: <b>done</b>"),
		},
		2: {calls(call("write_file", map[string]any{"path": "report.txt", "content": "the report"})), complete("report written")},
		4: {complete("3 nodes for 10K-100K users")},
		5: {calls(call("ask_user", map[string]any{"question": "Shall I go on?"}))},
	}, setupOpts{mode: "default"})
	var started web.Started
	b.mustDo("POST", "/api/runs", web.NewRun{Goal: "Plan the rollout"}, &started)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "browser.mjs", b.http.URL, started.ID, artifacts)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "step: done") {
		t.Fatalf("browser did not finish:\n%s", out.String())
	}
	d := b.run(started.ID)
	if d.Status != "complete" || d.Result != "FINAL: <b>done</b>" {
		t.Fatalf("run %s %q", d.Status, d.Result)
	}
	if n := nodeOf(d, 5); n.State != "cancelled" {
		t.Fatalf("#5 %s", n.State)
	}
	var n4 web.NodeDetail
	b.mustDo("GET", "/api/runs/"+started.ID+"/nodes/4", nil, &n4)
	if !strings.Contains(n4.Context, "10K-100K") {
		t.Fatalf("#4 did not get the answer: %q", n4.Context)
	}
	if got, err := os.ReadFile(filepath.Join(b.ws, "report.txt")); err != nil || string(got) != "the report" {
		t.Fatalf("report.txt: %q %v", got, err)
	}
	for _, shot := range []string{"run-start.png", "run-approved.png", "run-complete.png", "run-phone.png", "node-2.png"} {
		if fi, err := os.Stat(filepath.Join(artifacts, shot)); err != nil || fi.Size() == 0 {
			t.Fatalf("screenshot %s: %v", shot, err)
		}
	}
	t.Logf("screenshots in %s", artifacts)
}
