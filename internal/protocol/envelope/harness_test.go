package envelope_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

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

// bundle is one envelope server driven over pipes, in the workspace ws.
type bundle struct {
	*testutil.Conn[out]
	t  *testing.T
	ws string
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
	return serveApp(t, a, ws)
}

// serveApp starts a server of app a (workspace ws) over pipes and waits
// for ready.
func serveApp(t *testing.T, a *app.App, ws string) (*bundle, out) {
	t.Helper()
	return serveAppWith(t, a, ws, envelope.Options{})
}

// serveAppWith is serveApp with the server's options o.
func serveAppWith(t *testing.T, a *app.App, ws string, o envelope.Options) (*bundle, out) {
	t.Helper()
	serve := func(in io.Reader, w, diag io.Writer) error {
		return envelope.Serve(context.Background(), a, in, w, diag, o)
	}
	b := &bundle{Conn: testutil.Serve(t, serve, decodeOut), t: t, ws: ws}
	ready := b.Next(func(out) bool { return true })
	if ready.Type != "ready" || ready.P.SessionID == "" {
		t.Fatalf("first line %s", ready.raw)
	}
	return b, ready
}

func typ(t string) func(out) bool { return func(o out) bool { return o.Type == t } }

// checkSeq fails unless the seq'd lines seen so far have strictly
// increasing seqs and every status_response has one.
func (b *bundle) checkSeq() {
	b.t.Helper()
	var last uint64
	for _, o := range b.All {
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

// decodeOut decodes an output line with its payload.
func decodeOut(line string) (out, error) {
	var o out
	if err := json.Unmarshal([]byte(line), &o); err != nil {
		return o, err
	}
	if err := json.Unmarshal(o.Payload, &o.P); err != nil {
		return o, fmt.Errorf("payload: %w", err)
	}
	o.raw = line
	return o, nil
}

func cmd(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
