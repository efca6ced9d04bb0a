package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestServeRefusesNonLoopbackWithoutToken: arbor serve on all interfaces
// without a token exits 2 before listening.
func TestServeRefusesNonLoopbackWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.run("serve", "--addr", "0.0.0.0:0")
	if o.code != 2 || !strings.Contains(o.stderr, "non-loopback address needs a token") {
		t.Fatalf("serve without token: %d %q", o.code, o.stderr)
	}
	// A bare port says what to write (it said "missing port in address").
	o = e.run("serve", "--addr", "8340")
	if o.code != 2 || !strings.Contains(o.stderr, "write 127.0.0.1:8340 (this machine only) or :8340 (every interface, with a token)") {
		t.Fatalf("serve --addr 8340: %d %q", o.code, o.stderr)
	}
}

// TestServeWithToken starts arbor serve with a token from the
// environment, reads the link it prints once, and calls the API with
// and without the token; SIGINT stops it cleanly.
func TestServeWithToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "ARBOR_SERVE_TOKEN=tok-123")
	e.useProvider("anthropic", "http://127.0.0.1:1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // hang guard
	defer cancel()
	c := e.cmd(ctx, "serve", "--addr", "127.0.0.1:0", "--model", "anthropic/claude-test")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no link printed: %v %s", err, errb.String())
	}
	link, ok := strings.CutPrefix(strings.TrimSpace(line), "arbor: serving on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") != "tok-123" {
		t.Fatalf("link %q: %v", link, err)
	}
	base := "http://" + u.Host
	if res, err := http.Get(base + "/api/runs"); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without token: %v %v", res, err)
	}
	req, _ := http.NewRequest("GET", base+"/api/runs", nil)
	req.Header.Set("Authorization", "Bearer tok-123")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("with token: %v %v", res, err)
	}
	var runs []json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&runs); err != nil || len(runs) != 0 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	res.Body.Close()
	if res, err := http.Get(link); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("printed link: %v %v", res, err)
	}
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("serve after SIGINT: %v\n%s", err, errb.String())
	}
}

// TestServeRunAnsweredFromShell: a run started from the web API is driven
// by the serve process, which serves its answer socket: `arbor answer`
// from another shell reaches it, as it reaches `arbor run`.
func TestServeRunAnsweredFromShell(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(treetest.Call("ask", map[string]any{"question": "Which region?"})),
			treetest.Complete("draft"),
			treetest.Complete("deploy to eu"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	web := startServe(t, e, "--model", model)
	base := web.base
	res, err := http.Post(base+"/api/runs", "application/json", strings.NewReader(`{"goal":"pick a region"}`))
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("start: %v %v", res, err)
	}
	var started struct{ ID string }
	if err := json.NewDecoder(res.Body).Decode(&started); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	events, err := http.Get(base + "/api/runs/" + started.ID + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()
	frames := bufio.NewScanner(events.Body)
	waitFor := func(want ...string) {
		t.Helper()
		for frames.Scan() {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(frames.Text(), w)
			}
			if ok {
				return
			}
		}
		t.Fatalf("stream ended before %q: %v", want, frames.Err())
	}
	var tree struct {
		Nodes []struct {
			ID    int64
			State string
		}
	}
	r2, err := http.Get(base + "/api/runs/" + started.ID)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(r2.Body).Decode(&tree)
	r2.Body.Close()
	if len(tree.Nodes) < 2 || tree.Nodes[1].State != "active" {
		waitFor(`"id":2`, `"state":"active"`)
	}
	if o := e.run("answer", started.ID, "#2", "eu"); o.code != 0 || !strings.Contains(o.stdout, "delivered to the running process") {
		t.Fatalf("answer: %d %q %q", o.code, o.stdout, o.stderr)
	}
	waitFor(`"outcome":"complete"`, "deploy to eu")
	web.stop() // a clean exit after SIGINT
}
