package envelope_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/testutil"
)

// out is one output envelope with the payload fields the tests look at.
type out struct {
	Type    string          `json:"type"`
	Seq     uint64          `json:"seq"`
	Payload json.RawMessage `json:"payload"`
	P       struct {
		SessionID       string          `json:"session_id"`
		Busy            bool            `json:"busy"`
		Code            string          `json:"code"`
		Message         string          `json:"message"`
		Type            string          `json:"type"`
		Text            string          `json:"text"`
		RequestID       string          `json:"request_id"`
		Reason          string          `json:"reason"`
		ToolName        string          `json:"tool_name"`
		Question        string          `json:"question"`
		LastOutcome     string          `json:"last_outcome"`
		Suppress        bool            `json:"suppress_user_notification"`
		PendingConfirm  json.RawMessage `json:"pending_confirm"`
		PendingQuestion json.RawMessage `json:"pending_question"`
		PendingHandoff  json.RawMessage `json:"pending_handoff"`
		PlanPath        string          `json:"plan_path"`
		PlanText        string          `json:"plan_text"`
		Events          []string        `json:"events"`
		Output          string          `json:"output"`
		Failed          bool            `json:"failed"`
		Command         string          `json:"command"`
		OK              bool            `json:"ok"`
		Status          string          `json:"status"`
		Trigger         string          `json:"trigger"`
		Role            string          `json:"role"`
		CurrentRole     string          `json:"current_role"`
		RunningJobs     int             `json:"running_jobs"`
		Content         string          `json:"content"`
		MessageIndex    int             `json:"message_index"`
		TargetAgentID   string          `json:"target_agent_id"`
		Roles           []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
		} `json:"roles"`
	}
	raw string
}

type bundle struct {
	t    *testing.T
	ws   string
	in   *io.PipeWriter
	outs chan out
	diag *testutil.SyncBuffer
	done chan error
	all  []out
}

// setup starts a server over pipes against srv and waits for ready.
func setup(t *testing.T, srv *llmtest.Server) (*bundle, out) {
	t.Helper()
	return setupFiles(t, srv, nil)
}

// openApp opens an app against srv in a fresh home whose workspace holds
// files (path relative to the workspace → content).
func openApp(t *testing.T, srv *llmtest.Server, files map[string]string) (a *app.App, home, ws string) {
	t.Helper()
	return openGolden(t, srv.URL, files)
}

// setupFiles is setup with files (path relative to the workspace →
// content) written into the workspace first.
func setupFiles(t *testing.T, srv *llmtest.Server, files map[string]string) (*bundle, out) {
	t.Helper()
	a, _, ws := openApp(t, srv, files)
	pr, pw := io.Pipe()
	or, ow := io.Pipe()
	b := &bundle{t: t, ws: ws, in: pw, outs: make(chan out, 4096), diag: &testutil.SyncBuffer{}, done: make(chan error, 1)}
	go func() {
		err := envelope.Serve(context.Background(), a, pr, ow, b.diag, envelope.Options{})
		ow.Close()
		b.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(or)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			var o out
			if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
				t.Errorf("output is not JSON: %q", sc.Text())
				continue
			}
			if err := json.Unmarshal(o.Payload, &o.P); err != nil {
				t.Errorf("payload: %v in %q", err, sc.Text())
			}
			o.raw = sc.Text()
			b.outs <- o
		}
		close(b.outs)
	}()
	t.Cleanup(func() { pw.Close() })
	ready := b.next(func(out) bool { return true })
	if ready.Type != "ready" || ready.P.SessionID == "" {
		t.Fatalf("first line %s", ready.raw)
	}
	return b, ready
}

func (b *bundle) send(lines ...string) {
	b.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(b.in, l+"\n"); err != nil {
			b.t.Fatal(err)
		}
	}
}

// next returns the next output line matching pred, failing after a
// generous bound (a hang, not a timing assertion).
func (b *bundle) next(pred func(out) bool) out {
	b.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case o, ok := <-b.outs:
			if !ok {
				b.t.Fatalf("output ended; diagnostics:\n%s", b.diag.String())
			}
			b.all = append(b.all, o)
			if pred(o) {
				return o
			}
		case <-deadline:
			b.t.Fatalf("no matching output line; diagnostics:\n%s", b.diag.String())
		}
	}
}

func typ(t string) func(out) bool { return func(o out) bool { return o.Type == t } }

// close ends the input and waits for Serve to return.
func (b *bundle) close() {
	b.t.Helper()
	b.in.Close()
	for o := range b.outs {
		b.all = append(b.all, o)
	}
	if err := <-b.done; err != nil {
		b.t.Fatal(err)
	}
}

// checkSeq fails unless the seq'd lines seen so far have strictly
// increasing seqs and every status_response has one.
func (b *bundle) checkSeq() {
	b.t.Helper()
	var last uint64
	for _, o := range b.all {
		if o.Type == "status_response" && o.Seq == 0 {
			b.t.Fatalf("status_response without seq: %s", o.raw)
		}
		if o.Seq == 0 {
			continue
		}
		if o.Seq <= last {
			b.t.Fatalf("seq %d after %d: %s", o.Seq, last, o.raw)
		}
		last = o.Seq
	}
}

func cmd(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
