package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// These tests run the built binary the way a gateway does (issue #4):
// `arbor headless` behind stdin/stdout pipes, stdout read line by line,
// stderr collected apart, commands written as the events arrive.

// hangBound is how long a gateway waits for a line or an exit before the
// test gives up. It bounds hangs only; nothing is timed.
const hangBound = time.Minute

// gwLine is one stdout line: an envelope and the payload fields the tests
// look at.
type gwLine struct {
	Type string `json:"type"`
	Seq  uint64 `json:"seq"`
	P    struct {
		SessionID     string          `json:"session_id"`
		Busy          bool            `json:"busy"`
		LastOutcome   string          `json:"last_outcome"`
		Suppress      bool            `json:"suppress_user_notification"`
		RequestID     string          `json:"request_id"`
		ToolName      string          `json:"tool_name"`
		ArgsJSON      string          `json:"args_json"`
		PendingCfm    json.RawMessage `json:"pending_confirm"`
		AgentID       string          `json:"agent_id"`
		TaskID        string          `json:"task_id"`
		AgentType     string          `json:"agent_type"`
		Description   string          `json:"description"`
		ParentAgentID string          `json:"parent_agent_id"`
		ParentTaskID  string          `json:"parent_task_id"`
		TargetAgentID string          `json:"target_agent_id"`
		Kind          string          `json:"kind"`
		Message       string          `json:"message"`
		Summary       string          `json:"summary"`
		State         string          `json:"state"`
		Text          string          `json:"text"`
	} `json:"payload"`
	raw string
}

// gateway is one `arbor headless` process driven through its pipes.
type gateway struct {
	t      *testing.T
	c      *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line; closed at EOF
	stderr *testutil.SyncBuffer
	exited chan struct{} // closed once the process is reaped
	seen   []gwLine      // the lines read so far, in order
	ready  gwLine
}

// startGateway starts `arbor headless args...` and reads its ready line.
func startGateway(t *testing.T, e *env, args ...string) *gateway {
	t.Helper()
	c := e.cmd(context.Background(), append([]string{"headless"}, args...)...)
	c.Stdin = nil
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{t: t, c: c, stdin: stdin, lines: make(chan string, 64), stderr: &testutil.SyncBuffer{}, exited: make(chan struct{})}
	c.Stderr = g.stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				g.lines <- line
			}
			if err != nil {
				break
			}
		}
		close(g.lines)
		_ = c.Wait() // after the last read, as StdoutPipe requires
		close(g.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-g.exited:
			return
		default:
		}
		_ = c.Process.Kill()
		for range g.lines {
		}
		<-g.exited
	})
	g.ready = g.next("ready", func(gwLine) bool { return true })
	if g.ready.Type != "ready" || g.ready.P.SessionID == "" {
		g.fatalf("the first line is not ready with a session id: %s", g.ready.raw)
	}
	return g
}

// fatalf fails the test with the gateway's transcript and stderr.
func (g *gateway) fatalf(format string, args ...any) {
	g.t.Helper()
	var b strings.Builder
	for _, l := range g.seen {
		b.WriteString(l.raw)
	}
	g.t.Fatalf(format+"\nstdout so far:\n%s\nstderr:\n%s", append(args, b.String(), g.stderr.String())...)
}

// read takes the next stdout line; ok is false at EOF.
func (g *gateway) read(what string) (gwLine, bool) {
	g.t.Helper()
	timer := time.NewTimer(hangBound)
	defer timer.Stop()
	select {
	case raw, ok := <-g.lines:
		if !ok {
			return gwLine{}, false
		}
		l := gwLine{raw: raw}
		if !strings.HasSuffix(raw, "\n") {
			g.fatalf("unterminated stdout line %q", raw)
		}
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			g.fatalf("stdout line is not a JSON envelope (%v): %q", err, raw)
		}
		g.seen = append(g.seen, l)
		return l, true
	case <-timer.C:
		g.fatalf("waited %v for %s", hangBound, what)
	}
	panic("unreachable")
}

// next reads lines until one satisfies match and returns it.
func (g *gateway) next(what string, match func(gwLine) bool) gwLine {
	g.t.Helper()
	for {
		l, ok := g.read(what)
		if !ok {
			g.fatalf("stdout ended while waiting for %s", what)
		}
		if match(l) {
			return l
		}
	}
}

// nextType reads lines until one of type typ.
func (g *gateway) nextType(typ string) gwLine {
	g.t.Helper()
	return g.next(typ, func(l gwLine) bool { return l.Type == typ })
}

// send writes one command line.
func (g *gateway) send(cmd map[string]any) {
	g.t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.stdin.Write(append(b, '\n')); err != nil {
		g.fatalf("writing %s: %v", b, err)
	}
}

// finish reads the rest of stdout, waits for the exit and returns its code.
func (g *gateway) finish() int {
	g.t.Helper()
	for {
		if _, ok := g.read("the end of stdout (arbor exiting)"); !ok {
			break
		}
	}
	select {
	case <-g.exited:
	case <-time.After(hangBound):
		g.fatalf("arbor did not exit within %v", hangBound)
	}
	return g.c.ProcessState.ExitCode()
}

// closeAndWait closes stdin as a gateway does at the end and wants exit 0.
func (g *gateway) closeAndWait() {
	g.t.Helper()
	if err := g.stdin.Close(); err != nil {
		g.t.Fatal(err)
	}
	if code := g.finish(); code != 0 {
		g.fatalf("exit code %d after the end of stdin, want 0", code)
	}
}

// checkWire checks the whole stdout once the process has exited: each line
// is exactly {type, seq?, payload}, the first (and only the first) is
// ready, and seq increases strictly over the lines that carry one.
func (g *gateway) checkWire() {
	g.t.Helper()
	var last uint64
	for i, l := range g.seen {
		var env struct {
			Type    string          `json:"type"`
			Seq     *uint64         `json:"seq"`
			Payload json.RawMessage `json:"payload"`
		}
		d := json.NewDecoder(strings.NewReader(l.raw))
		d.DisallowUnknownFields()
		if err := d.Decode(&env); err != nil || d.More() {
			g.fatalf("line %d is not an envelope (%v): %s", i+1, err, l.raw)
		}
		if env.Type == "" || !bytes.HasPrefix(bytes.TrimSpace(env.Payload), []byte("{")) {
			g.fatalf("line %d lacks a type or an object payload: %s", i+1, l.raw)
		}
		if (i == 0) != (env.Type == "ready") {
			g.fatalf("line %d: ready must be the first line and only it: %s", i+1, l.raw)
		}
		if env.Type == "status_response" && (env.Seq == nil || *env.Seq == 0) {
			g.fatalf("line %d: status_response without a seq: %s", i+1, l.raw)
		}
		if env.Seq != nil {
			if *env.Seq <= last {
				g.fatalf("line %d: seq %d after %d: %s", i+1, *env.Seq, last, l.raw)
			}
			last = *env.Seq
		}
	}
}

// gwModel answers the main agent by what it was just told — a tool's
// result by the tool's name, a user message by the first of replies it
// contains — so the number of delivery turns (a child's progress note and
// its end may come in one batch or two) does not matter; node #N answers
// from child[N] turn by turn, its first turn held until release closes.
type gwModel struct {
	replies []gwReply
	results map[string]llmtest.Turn
	child   treetest.Script
	release <-chan struct{}

	mu         sync.Mutex
	told       []string // the main agent's user messages, in order
	unexpected []string
}

type gwReply struct {
	contains string
	answer   llmtest.Turn
}

func (m *gwModel) respond(req llmtest.Request) llmtest.Turn {
	if node := treetest.NodeOf(req); node != 0 {
		turns, i := m.child[node], treetest.Turns(req)
		if i == 0 {
			<-m.release
		}
		if i < len(turns) {
			return turns[i]
		}
		return m.fail(fmt.Sprintf("node #%d turn %d", node, i))
	}
	if name := resultOf(req); name != "" {
		if t, ok := m.results[name]; ok {
			return t
		}
		return m.fail("result of " + name)
	}
	text := req.LastUserText()
	m.mu.Lock()
	m.told = append(m.told, text)
	m.mu.Unlock()
	for _, r := range m.replies {
		if strings.Contains(text, r.contains) {
			return r.answer
		}
	}
	return m.fail(text)
}

// fail records an unexpected request and answers it with an error.
func (m *gwModel) fail(what string) llmtest.Turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unexpected = append(m.unexpected, what)
	return llmtest.Turn{Text: "unexpected request: " + what, Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}}
}

func (m *gwModel) report() (told, unexpected []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.told...), append([]string(nil), m.unexpected...)
}

// resultOf names the tool whose result ends req, "" when req ends with
// the user's text.
func resultOf(req llmtest.Request) string {
	n := len(req.Messages)
	if n < 2 {
		return ""
	}
	for _, p := range req.Messages[n-1].Parts {
		if p.Type != llm.PartToolResult || p.ToolResult == nil {
			continue
		}
		for _, c := range req.Messages[n-2].ToolCalls() {
			if c.ID == p.ToolResult.CallID {
				return c.Name
			}
		}
	}
	return ""
}

const (
	gwPrompt1   = "Turn one: record the tree in notes.txt."
	gwPrompt2   = "Turn two: have a helper count the leaves."
	gwPrompt3   = "Turn three: thanks, that is all."
	gwNotes     = "oak: 3 branches\n"
	gwGoal      = "count the leaves"
	gwProgress  = "half of the branches counted"
	gwResult    = "412 leaves on 3 branches"
	gwDelivered = "Sub-agent #2 (" + gwGoal + ") ended, complete:\n" + gwResult
	gwStarted   = "A helper is counting the leaves."
	gwNoted     = "Noted the helper's progress."
	gwAnswer    = "The helper counted 412 leaves."
	gwFarewell  = "You are welcome."
	gwWroteNote = "Wrote notes.txt."
)

func TestHeadlessGateway(t *testing.T) {
	t.Parallel()
	t.Run("MultiTurnWithApprovalAndChild", testGatewaySession)
	t.Run("SIGTERMThenResume", testGatewaySigterm)
}

func testGatewaySession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := make(chan struct{})
	m := &gwModel{
		replies: []gwReply{
			{gwPrompt1, treetest.Calls(treetest.Call("write_file", map[string]any{"path": "notes.txt", "content": gwNotes}))},
			{gwPrompt2, treetest.Calls(treetest.Call("spawn", map[string]any{"goal": gwGoal, "prompt": "Count the leaves of the oak and report the total."}))},
			{gwPrompt3, llmtest.Turn{Text: gwFarewell}},
			{gwDelivered, llmtest.Turn{Text: gwAnswer}},
			{"Progress note from sub-agent #2 (" + gwGoal + "): " + gwProgress, llmtest.Turn{Text: gwNoted}},
		},
		results: map[string]llmtest.Turn{"write_file": {Text: gwWroteNote}, "spawn": {Text: gwStarted}},
		child: treetest.Script{2: {
			treetest.Calls(treetest.Call("notify", map[string]any{"message": gwProgress})),
			treetest.Complete(gwResult),
		}},
		release: release,
	}
	srv := llmtest.NewServerFunc(m.respond)
	defer srv.Close()
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // before srv.Close, which waits for the held handler
	model := e.useProvider("anthropic", srv.URL)

	g := startGateway(t, e, "--model", model)
	session := g.ready.P.SessionID

	// 1. A first status: a snapshot with a seq before any push.
	g.send(map[string]any{"type": "status"})
	st := g.nextType("status_response")
	if st.Seq == 0 || st.P.Busy || st.P.SessionID != session {
		g.fatalf("first status_response: %s", st.raw)
	}

	// 2. Turn one: write_file needs approval; the gateway allows it.
	g.send(map[string]any{"type": "send", "content": gwPrompt1})
	req := g.nextType("confirm_request")
	if req.P.ToolName != "write_file" || req.P.AgentID != "" || req.P.RequestID == "" || !strings.Contains(req.P.ArgsJSON, "notes.txt") {
		g.fatalf("confirm_request: %s", req.raw)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "notes.txt")); !errors.Is(err, os.ErrNotExist) {
		g.fatalf("notes.txt exists before the approval: %v", err)
	}
	g.send(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow"})
	idle := g.nextType("idle")
	if idle.P.LastOutcome != "completed" || idle.P.Suppress {
		g.fatalf("idle after turn one: %s", idle.raw)
	}
	if got := lastMainText(g.seen); got != gwWroteNote {
		g.fatalf("turn one's last main message is %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "notes.txt")); err != nil || string(b) != gwNotes {
		g.fatalf("notes.txt = %q, %v", b, err)
	}

	// 3. Turn two: a child node; a status races the pushes.
	turn2 := len(g.seen)
	g.send(map[string]any{"type": "send", "content": gwPrompt2})
	started := g.nextType("agent_started")
	g.send(map[string]any{"type": "status"})
	st = g.next("status_response", func(l gwLine) bool {
		if l.Type == "idle" {
			g.fatalf("idle while the child is held: %s", l.raw)
		}
		return l.Type == "status_response"
	})
	if !st.P.Busy || st.P.SessionID != session {
		g.fatalf("status_response while the child is held: %s", st.raw)
	}
	for _, l := range g.seen[:len(g.seen)-1] {
		if l.Seq >= st.Seq {
			g.fatalf("status_response seq %d is not above %s", st.Seq, l.raw)
		}
	}
	releaseOnce()
	idle = g.nextType("idle")
	if idle.P.LastOutcome != "completed" || idle.P.Suppress {
		g.fatalf("idle after turn two: %s", idle.raw)
	}
	checkChild(g, g.seen[turn2:], session+".2", started)
	told, _ := m.report()
	if all := strings.Join(told, "\n"); !strings.Contains(all, gwDelivered) {
		g.fatalf("the child's result was not delivered to the main agent; it was told:\n%s", all)
	}

	// 4. Turn three: plain text.
	turn3 := len(g.seen)
	g.send(map[string]any{"type": "send", "content": gwPrompt3})
	idle = g.nextType("idle")
	if idle.P.LastOutcome != "completed" || lastMainText(g.seen[turn3:]) != gwFarewell {
		g.fatalf("turn three: %s", idle.raw)
	}
	g.send(map[string]any{"type": "status"})
	if st := g.nextType("status_response"); st.P.Busy || st.P.LastOutcome != "completed" || st.P.SessionID != session || string(st.P.PendingCfm) != "null" {
		g.fatalf("status after the session: %s", st.raw)
	}

	// 5, 6. End of input: exit 0, and the whole stdout is well formed.
	g.closeAndWait()
	g.checkWire()
	if _, unexpected := m.report(); len(unexpected) > 0 {
		g.fatalf("unexpected model requests: %q", unexpected)
	}
	var users []string
	for _, r := range e.show(session).Messages {
		if r.Message.Role == llm.RoleUser && r.Message.Text() != "" {
			users = append(users, r.Message.Text())
		}
	}
	if all := strings.Join(users, "\n"); !strings.Contains(all, gwPrompt1) || !strings.Contains(all, gwPrompt2) || !strings.Contains(all, gwPrompt3) {
		g.fatalf("stored user messages: %q", users)
	}

	// 7. -c continues this conversation, not the newer session of its
	// sub-agent.
	c := startGateway(t, e, "-c", "--model", model)
	if c.ready.P.SessionID != session {
		c.fatalf("-c continued %q, want the main session %q", c.ready.P.SessionID, session)
	}
	c.closeAndWait()
}

// checkChild checks turn two's lines, up to and including its idle: the
// child's three events name it alike and come in order, and the idle
// follows agent_done and the main agent's answer to the delivered result.
func checkChild(g *gateway, turn []gwLine, task string, started gwLine) {
	g.t.Helper()
	idx := map[string]int{}
	var notify, done gwLine
	for i, l := range turn {
		switch l.Type {
		case "agent_started", "agent_notify", "agent_done":
			if _, dup := idx[l.Type]; dup {
				g.fatalf("a second %s: %s", l.Type, l.raw)
			}
			idx[l.Type] = i
			if l.Type == "agent_notify" {
				notify = l
			} else if l.Type == "agent_done" {
				done = l
			}
		case "assistant_message":
			if l.P.AgentID == started.P.AgentID && (l.P.TaskID != task || l.P.ParentAgentID != "") {
				g.fatalf("the child's assistant_message is not routed to its task: %s", l.raw)
			}
			if l.P.AgentID == "" && l.P.Text == gwAnswer {
				idx["answer"] = i
			}
		}
	}
	for _, k := range []string{"agent_started", "agent_notify", "agent_done", "answer"} {
		if _, ok := idx[k]; !ok {
			g.fatalf("turn two has no %s", k)
		}
	}
	if !(idx["agent_started"] < idx["agent_notify"] && idx["agent_notify"] < idx["agent_done"] && idx["agent_done"] < idx["answer"]) {
		g.fatalf("child events out of order: %v", idx)
	}
	s, n, d := started.P, notify.P, done.P
	if s.TaskID != task || s.AgentID == "" || s.ParentAgentID != "" || s.ParentTaskID != "" || s.AgentType != "spawn" || s.Description != gwGoal {
		g.fatalf("agent_started: %s", started.raw)
	}
	if n.TaskID != task || n.AgentID != s.AgentID || n.ParentAgentID != "" || n.TargetAgentID != "" || n.Kind != "progress" || n.Message != gwProgress {
		g.fatalf("agent_notify: %s", notify.raw)
	}
	if d.TaskID != task || d.AgentID != s.AgentID || d.ParentAgentID != "" || d.Summary != gwResult || d.State != "complete" {
		g.fatalf("agent_done: %s", done.raw)
	}
	if got := lastMainText(turn); got != gwAnswer {
		g.fatalf("the main agent's last message before idle is %q, want its answer to the result", got)
	}
}

// lastMainText is the text of the main agent's last non-empty
// assistant_message among ls.
func lastMainText(ls []gwLine) string {
	text := ""
	for _, l := range ls {
		if l.Type == "assistant_message" && l.P.AgentID == "" && l.P.Text != "" {
			text = l.P.Text
		}
	}
	return text
}

// testGatewaySigterm stops arbor with SIGTERM while a model stream stalls,
// then resumes the stored session in a new process.
func testGatewaySigterm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const (
		long  = "A long question that never gets its answer."
		again = "After the restart: are you back?"
		back  = "Back, and I remember the long question."
	)
	var (
		mu      sync.Mutex
		stalled bool
	)
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		switch text := req.LastUserText(); {
		case strings.Contains(text, again):
			return llmtest.Turn{Text: back}
		case strings.Contains(text, long) && !stalled:
			stalled = true
			return llmtest.Turn{Text: "never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}}
		default:
			return llmtest.Turn{Text: "unexpected request: " + text, Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}}
		}
	})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	g := startGateway(t, e, "--model", model)
	session := g.ready.P.SessionID
	g.send(map[string]any{"type": "send", "content": long})
	srv.WaitRequests(1) // the stream is open and stalled
	if err := g.c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := g.finish(); code != 0 {
		g.fatalf("exit code %d after SIGTERM, want 0", code)
	}
	g.checkWire()
	for _, l := range g.seen {
		if l.Type == "assistant_message" && strings.Contains(l.P.Text, "never finished") {
			g.fatalf("the stalled answer was reported complete: %s", l.raw)
		}
	}

	r := startGateway(t, e, "--model", model, "-r", session)
	if r.ready.P.SessionID != session {
		r.fatalf("resumed ready names session %q, want %q", r.ready.P.SessionID, session)
	}
	r.send(map[string]any{"type": "status"})
	if st := r.nextType("status_response"); st.Seq == 0 || st.P.Busy || st.P.SessionID != session {
		r.fatalf("status after resume: %s", st.raw)
	}
	r.send(map[string]any{"type": "send", "content": again})
	idle := r.nextType("idle")
	if idle.P.LastOutcome != "completed" || lastMainText(r.seen) != back {
		r.fatalf("the turn after resume: %s", idle.raw)
	}
	r.closeAndWait()
	r.checkWire()
	reqs := srv.Requests()
	if len(reqs) != 2 {
		r.fatalf("%d model requests, want 2 (the stalled one, the one after resume)", len(reqs))
	}
	kept := false
	for _, m := range reqs[1].Messages {
		kept = kept || (m.Role == llm.RoleUser && strings.Contains(m.Text(), long))
	}
	if !kept {
		r.fatalf("the resumed session lost the interrupted question: %+v", reqs[1].Messages)
	}
}
