package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// served is an `arbor serve` process and its API.
type served struct {
	t    *testing.T
	base string
	// stop ends serve with SIGINT, requires a clean exit and returns its
	// stderr; it runs once, at the latest when the test ends.
	stop func() string
}

// startServe starts arbor serve with args on a free loopback port.
func startServe(t *testing.T, e *env, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	c := e.cmd(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceValue(func() string {
		defer cancel()
		_ = c.Process.Signal(syscall.SIGINT)
		if err := c.Wait(); err != nil {
			t.Errorf("serve after SIGINT: %v\n%s", err, errb.String())
		}
		return errb.String()
	})
	t.Cleanup(func() { stop() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no link printed: %v %s", err, stop())
	}
	return &served{t: t, base: strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "arbor: serving on "), "/"), stop: stop}
}

// post sends a JSON body and decodes the reply into out; it returns the
// status.
func (s *served) post(path, body string, out any) int {
	s.t.Helper()
	res, err := http.Post(s.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
		}
	}
	return res.StatusCode
}

func (s *served) mustPost(path, body string) {
	s.t.Helper()
	var reply map[string]any
	if code := s.post(path, body, &reply); code/100 != 2 {
		s.t.Fatalf("POST %s: %d %v", path, code, reply)
	}
}

// sse reads a run's event stream.
type sse struct {
	t      *testing.T
	run    string
	frames chan [2]string // event, data
}

func (s *served) events(run string) *sse {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/api/runs/"+run+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		s.t.Fatalf("events: %v %v", res, err)
	}
	st := &sse{t: s.t, run: run, frames: make(chan [2]string, 10000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(st.frames)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev string
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.HasPrefix(line, "event: "):
				ev = line[7:]
			case strings.HasPrefix(line, "data: "):
				st.frames <- [2]string{ev, line[6:]}
			}
		}
	}()
	s.t.Cleanup(func() { cancel(); res.Body.Close(); <-done })
	return st
}

// until reads frames until one of event ev holds every want.
func (st *sse) until(ev string, want ...string) {
	st.t.Helper()
	if !st.within(60*time.Second, ev, want...) { // hang guard
		st.t.Fatalf("no %s frame with %q", ev, want)
	}
}

// within reads frames for up to d, until one of event ev holds every
// want; it reports whether one did.
func (st *sse) within(d time.Duration, ev string, want ...string) bool {
	st.t.Helper()
	timeout := time.After(d)
	for {
		select {
		case f, ok := <-st.frames:
			if !ok {
				st.t.Fatalf("stream ended before %s %q", ev, want)
			}
			match := f[0] == ev
			for _, w := range want {
				match = match && strings.Contains(f[1], w)
			}
			if match {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// approval returns the id of node's next approval of tool: pending
// already (read from the API), or announced on the stream.
func (s *served) approval(st *sse, seen map[string]bool, node int64, tool string) string {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(s.base + "/api/runs/" + st.run)
		if err != nil {
			s.t.Fatal(err)
		}
		var d struct {
			Nodes []struct {
				ID        int64
				SessionID string `json:"session_id"`
			}
			Pending []struct {
				ID        string
				SessionID string `json:"session_id"`
				Approval  *struct{ Tool string }
			}
		}
		err = json.NewDecoder(res.Body).Decode(&d)
		res.Body.Close()
		if err != nil {
			s.t.Fatal(err)
		}
		session := ""
		for _, n := range d.Nodes {
			if n.ID == node {
				session = n.SessionID
			}
		}
		for _, in := range d.Pending {
			if in.Approval != nil && in.Approval.Tool == tool && in.SessionID == session && !seen[in.ID] {
				seen[in.ID] = true
				return in.ID
			}
		}
		// Read the API again on the frame, or after a second: a cluster
		// run's published interactions are the API's source of truth.
		if time.Now().After(deadline) {
			s.t.Fatalf("no pending %s approval of #%d after 60 s", tool, node)
		}
		st.within(time.Second, "interaction", fmt.Sprintf(`"node":%d`, node), `"Tool":"`+tool+`"`)
	}
}

// fifo makes a named pipe and reports, on the returned channels, when a
// process opened it for writing (started) and when every writer has
// closed it (ended): a tool process that writes to it and then dies.
func fifo(t *testing.T, path string) (started, ended <-chan struct{}) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	s, e := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(e)
		f, err := os.Open(path) // blocks until a writer opens it
		close(s)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(io.Discard, f) // EOF once the writers are gone
	}()
	return s, e
}

func wait(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(60 * time.Second): // hang guard
		t.Fatalf("%s never happened", what)
	}
}

// TestServeSteersRunOfAnotherProcess: `arbor run` drives a tree in a
// terminal (plain lines, approvals prompted there); `arbor serve`, another
// process, steers it through the JSON API and the run's owner socket:
// it answers an ask and approves a write (the terminal drops its prompts
// and says so), pauses and resumes a node whose tool process then ends,
// and stops the node while its next tool process runs. Every change is made by the run
// process's engine, and its terminal shows it.
func TestServeSteersRunOfAnotherProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first, firstEnded := fifo(t, filepath.Join(e.home, "first.fifo"))
	second, secondEnded := fifo(t, filepath.Join(e.home, "second.fifo"))
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(
				treetest.Call("spawn", map[string]any{"goal": "writer", "prompt": "Write a.txt."}),
				treetest.Call("spawn", map[string]any{"goal": "sleeper", "prompt": "Sleep."}),
				treetest.Call("ask", map[string]any{"question": "Which region?"})),
			treetest.Complete("draft"),
			treetest.Complete("final: eu"),
		},
		2: {
			// Slow, so that the ask (which makes no model call) reaches the
			// terminal first: the terminal shows one prompt at a time, and
			// the write's approval would hide the question (CI, load 6).
			slowly(treetest.Calls(treetest.Call("write_file", map[string]any{"path": "a.txt", "content": "from the web"}))),
			treetest.Complete("written"),
		},
		3: {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "sleep 600 > " + filepath.Join(e.home, "first.fifo")})),
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "sleep 600 > " + filepath.Join(e.home, "second.fifo")})),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	con, waitRun := startOnTerminal(t, e, "run", "--plain", "--model", model, "steer me from the web")
	con.expect(", model ", 1)
	run := runID(t, con.text())
	web := startServe(t, e)
	events := web.events(run)

	// The ask is asked on the terminal and answered from the web.
	con.expect("? Which region?", 1)
	web.mustPost("/api/runs/"+run+"/nodes/4/answer", `{"answer": "eu"}`)
	con.expect(`"Which region?": answered elsewhere (answered "eu")`, 1)
	if code := web.post("/api/runs/"+run+"/nodes/4/answer", `{"answer": "us"}`, nil); code != http.StatusConflict {
		t.Fatalf("answering twice: %d", code)
	}

	// The write asks; the web allows it once.
	seen := map[string]bool{}
	iid := web.approval(events, seen, 2, "write_file")
	web.mustPost("/api/runs/"+run+"/interactions/"+iid, `{"allow": true}`)
	if code := web.post("/api/runs/"+run+"/interactions/"+iid, `{"allow": true}`, nil); code != http.StatusConflict {
		t.Fatalf("approving twice: %d", code)
	}
	events.until("node", `"id":2`, `"state":"complete"`)
	if got, err := os.ReadFile(filepath.Join(e.workspace, "a.txt")); err != nil || string(got) != "from the web" {
		t.Fatalf("a.txt %q %v", got, err)
	}

	// The sleeper's command: allowed from the web, paused while it runs
	// (its process ends), resumed.
	web.mustPost("/api/runs/"+run+"/interactions/"+web.approval(events, seen, 3, "shell"), `{"allow": true}`)
	wait(t, "the first sleep", first)
	// The terminal prompted for one of the two approvals, and drops both.
	con.expect("[y] yes", 1)
	con.expect("shell: answered elsewhere (allowed once)", 1)
	con.expect("write_file: answered elsewhere (allowed once)", 1)
	web.mustPost("/api/runs/"+run+"/nodes/3/pause", `{}`)
	wait(t, "the paused node's process to end", firstEnded)
	var refused map[string]string
	if code := web.post("/api/runs/"+run+"/nodes/3/pause", `{}`, &refused); code != http.StatusConflict || !strings.Contains(refused["error"], "already paused") {
		t.Fatalf("pausing twice: %d %v", code, refused)
	}
	if code := web.post("/api/runs/"+run+"/nodes/99/stop", `{}`, nil); code != http.StatusNotFound {
		t.Fatalf("stopping a node that does not exist: %d", code)
	}
	web.mustPost("/api/runs/"+run+"/nodes/3/resume", `{}`)

	// After the resume it runs its next command; the web stops the node
	// and that process ends too.
	web.mustPost("/api/runs/"+run+"/interactions/"+web.approval(events, seen, 3, "shell"), `{"allow": true}`)
	wait(t, "the second sleep", second)
	var stopped struct{ State string }
	if code := web.post("/api/runs/"+run+"/nodes/3/stop", `{}`, &stopped); code != http.StatusOK || stopped.State != "cancelled" {
		t.Fatalf("stop: %d %+v", code, stopped)
	}
	wait(t, "the stopped node's process to end", secondEnded)

	// The root synthesizes.
	events.until("run", `"outcome":"complete"`, "final: eu")
	stdout, code := waitRun()
	if code != 0 || strings.TrimSpace(stdout) != "final: eu" {
		t.Fatalf("exit %d stdout %q\n%s", code, stdout, con.text())
	}
	// The terminal's last lines may still be on their way through the
	// pty when the process has exited: wait for each.
	for _, want := range []string{"#2 → write_file", "#3 active → paused", "#3 paused → pending", "#3 active → cancelled", "#4 active → complete"} {
		con.expect(want, 1)
	}
}

// slowly makes turn stream with a pause between its events.
func slowly(turn llmtest.Turn) llmtest.Turn {
	turn.Fault = &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(200 * time.Millisecond)}
	return turn
}
