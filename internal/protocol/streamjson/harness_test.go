package streamjson_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
	"github.com/arbor-run/arbor/internal/testutil"
)

// out is one output line, decoded into the fields the tests look at.
type out struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	RequestID string `json:"request_id"`
	Response  struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
	Request struct {
		Subtype   string          `json:"subtype"`
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
		ToolUseID string          `json:"tool_use_id"`
		Question  string          `json:"question"`
	} `json:"request"`
	Event struct {
		Subtype string `json:"subtype"`
		Content string `json:"content"`
	} `json:"event"`
	Message struct {
		Content []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Content string `json:"content"`
			IsError bool   `json:"is_error"`
		} `json:"content"`
	} `json:"message"`
	Result  string   `json:"result"`
	IsError bool     `json:"is_error"`
	Errors  []string `json:"errors"`
	Success bool     `json:"success"`
	raw     string
}

// bundle is one stream-json server driven over pipes.
type bundle struct {
	*testutil.Conn[out]
	t    *testing.T
	srv  *llmtest.Server
	ws   string
	home string
	env  map[string]string
}

type setupOpts struct {
	model string // "" = anthropic/claude-test
	mode  string
	noKey bool
	opts  streamjson.Options
	home  string // reuse another bundle's home (resume)
	// project is the workspace's .arbor/config.yaml, "" = none.
	project string
	// ctx is Serve's, cancelled as SIGTERM cancels it; nil = never.
	ctx context.Context
	// files are more files of the workspace (.claude/settings.json).
	files map[string]string
}

func setup(t *testing.T, srv *llmtest.Server, o setupOpts) *bundle {
	t.Helper()
	home := o.home
	if home == "" {
		home = t.TempDir()
	}
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range o.files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if o.project != "" {
		if err := os.MkdirAll(filepath.Join(ws, ".arbor"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".arbor", "config.yaml"), []byte(o.project), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{
		"ANTHROPIC_BASE_URL": srv.URL, "OPENAI_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "test-key-openai",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home,
	}
	if !o.noKey {
		env["ANTHROPIC_API_KEY"] = "test-key-123"
	}
	model := o.model
	if model == "" && !o.noKey {
		model = "anthropic/claude-test"
	}
	mode := o.mode
	if mode == "" {
		mode = "default"
	}
	if o.noKey {
		delete(env, "OPENAI_API_KEY")
		delete(env, "OPENAI_BASE_URL")
	}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: model, Mode: mode}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	serve := func(in io.Reader, w, diag io.Writer) error {
		return streamjson.Serve(ctx, a, in, w, diag, o.opts)
	}
	decode := func(line string) (out, error) {
		var o out
		err := json.Unmarshal([]byte(line), &o)
		o.raw = line
		return o, err
	}
	return &bundle{Conn: testutil.Serve(t, serve, decode), t: t, srv: srv, ws: ws, home: home, env: env}
}

func typ(t, sub string) func(out) bool {
	return func(o out) bool {
		return o.Type == t && (sub == "" || o.Subtype == sub || o.Response.Subtype == sub || o.Request.Subtype == sub)
	}
}

func (b *bundle) count(pred func(out) bool) int {
	n := 0
	for _, o := range b.All {
		if pred(o) {
			n++
		}
	}
	return n
}

const initialize = `{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}`

func user(text string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	return string(b)
}

func mustContain(t *testing.T, s, want string) {
	t.Helper()
	if !strings.Contains(s, want) {
		t.Fatalf("%q lacks %q", s, want)
	}
}
