// Package claudecode runs one turn of the Claude Code CLI in stream-json
// mode, as the agent of an arbor tree node.
//
// The CLI is started in its own process group with
//
//	-p --input-format stream-json --output-format stream-json --verbose
//	--permission-prompt-tool stdio --mcp-config {arbor mcp --run R --node N}
//
// so that every permission prompt comes to arbor as a can_use_tool control
// request (answered through Options.Permit, never by skipping permissions)
// and the node's tree tools are arbor's, forwarded to the run's owner. The
// turn's message is the first (and only) user message; the CLI's result
// message ends the turn, after which stdin is closed and the CLI exits.
// When the turn's context is done, an interrupt control request is sent;
// the result that ends the interrupted turn is waited for (within a grace
// period), and then the process group is ended.
//
// A result's spend is the turn's own: the CLI's per-model usage since its
// last result. Its total_cost_usd is not, on a resumed session: it counts
// the turns of earlier processes too.
package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

// ErrNoResult: the CLI exited without a result message.
var ErrNoResult = errors.New("claude code ended without a result")

// Options configure Run.
type Options struct {
	// Path is the claude executable.
	Path string
	// Dir is the working directory, Env the environment (nil: inherited).
	Dir string
	Env []string
	// MCPCommand and MCPArgs start the node's arbor MCP server
	// (arbor mcp --run RUN --node N).
	MCPCommand string
	MCPArgs    []string
	// MCPEnv is the server's environment on top of the CLI's: what must
	// not be on a command line (a store URL with its password).
	MCPEnv map[string]string
	// Model is passed as --model when set.
	Model string
	// Permit decides a can_use_tool request: allow, or deny with a
	// message for the model. It must return when ctx is done.
	Permit func(ctx context.Context, toolName, toolUseID string, input json.RawMessage) (allow bool, message string)
	// OnEvent is told when the session has begun, every assistant text
	// and the result (transcript).
	OnEvent func(Event)
	// Grace is how long an interrupted CLI may take to exit before its
	// process group is killed (default 5s).
	Grace time.Duration
}

// Event is a transcript entry of the turn.
type Event struct {
	Kind string // "init" (the CLI has begun the session), "assistant" (a text block) or "result"
	Text string
}

// Turn is one turn of a node.
type Turn struct {
	// SessionKey names the node's Claude Code session; its UUID is derived
	// from it, so a later turn resumes the same session.
	SessionKey string
	Resume     bool
	Message    string
}

// Result is the CLI's result message.
type Result struct {
	Text      string
	IsError   bool
	CostUSD   float64
	Usage     llm.Usage
	SessionID string
}

// SessionUUID is the Claude Code session id of key.
func SessionUUID(key string) string {
	h := sha256.Sum256([]byte("arbor-node:" + key))
	h[6] = (h[6] & 0x0f) | 0x40
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// Args returns the CLI's arguments for turn t with MCP config cfg (a file,
// or the JSON itself).
func Args(o Options, t Turn, cfg string) []string {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--mcp-config", cfg, "--strict-mcp-config"}
	if t.Resume {
		args = append(args, "--resume", SessionUUID(t.SessionKey))
	} else {
		args = append(args, "--session-id", SessionUUID(t.SessionKey))
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	return args
}

type mcpConfig struct {
	MCPServers map[string]mcpServer `json:"mcpServers"`
}

type mcpServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// Wire messages.
type userMessage struct {
	Type            string  `json:"type"`
	SessionID       string  `json:"session_id"`
	Message         userMsg `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
}

type userMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type controlRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

type controlResponse struct {
	Type     string       `json:"type"`
	Response responseBody `json:"response"`
}

type responseBody struct {
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

type permissionReply struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

type inMessage struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Message   struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"message"`
	Result       string  `json:"result"`
	IsError      bool    `json:"is_error"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	SessionID    string  `json:"session_id"`
	Usage        struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		CacheRead    int64 `json:"cache_read_input_tokens"`
		CacheWrite   int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	// SinceLast is what each model used since the process's previous
	// result: with one turn per process, this turn's spend, side calls
	// included. total_cost_usd is not: on --resume it counts the whole
	// session, earlier turns too.
	SinceLast map[string]modelUsage `json:"model_usage_since_last_result"`
}

type modelUsage struct {
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
	CacheRead    int64   `json:"cacheReadInputTokens"`
	CacheWrite   int64   `json:"cacheCreationInputTokens"`
	CostUSD      float64 `json:"costUSD"`
}

// spend is the turn's usage and cost as a result message reports them:
// the per-model usage since the last result when the CLI sends it, else
// the result's usage and total cost (right for a first turn only).
func (m *inMessage) spend() (llm.Usage, float64) {
	if m.SinceLast == nil {
		return llm.Usage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens,
			CacheReadTokens: m.Usage.CacheRead, CacheWriteTokens: m.Usage.CacheWrite}, m.TotalCostUSD
	}
	var u llm.Usage
	var cost float64
	for _, mu := range m.SinceLast {
		u = u.Add(llm.Usage{InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens,
			CacheReadTokens: mu.CacheRead, CacheWriteTokens: mu.CacheWrite})
		cost += mu.CostUSD
	}
	return u, cost
}

type canUseTool struct {
	Subtype   string          `json:"subtype"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// Run runs one turn. It returns the result message, or an error when the
// CLI could not run or ended without one; when ctx ended the turn the
// error wraps context.Cause(ctx).
func Run(ctx context.Context, o Options, t Turn) (Result, error) {
	cfg, err := mcpConfigFile(o)
	if err != nil {
		return Result{}, err
	}
	defer os.Remove(cfg)
	cmd := exec.Command(o.Path, Args(o, t, cfg)...)
	cmd.Dir, cmd.Env = o.Dir, o.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start claude code: %w", err)
	}
	pgid := cmd.Process.Pid
	w := &writer{w: stdin}
	if err := w.send(userMessage{Type: "user", Message: userMsg{Role: "user", Content: t.Message}}); err != nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		return Result{}, fmt.Errorf("send the turn's message to claude code: %w", err)
	}

	// On ctx done: interrupt; the interrupted turn ends with a result
	// that reports what it spent, which is waited for within the grace.
	// Then the process group is ended: SIGTERM, SIGKILL after the grace.
	grace := o.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	exited, gotResult := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-exited:
			return
		case <-ctx.Done():
		}
		_ = w.send(controlRequest{Type: "control_request", RequestID: "arbor-interrupt",
			Request: map[string]string{"subtype": "interrupt"}})
		bound := time.NewTimer(grace)
		defer bound.Stop()
		select {
		case <-exited:
			return
		case <-gotResult:
		case <-bound.C:
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	})

	var res Result
	got := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	var perms sync.WaitGroup
	pctx, pcancel := context.WithCancel(ctx) // permission asks end with the CLI
	defer pcancel()
	for sc.Scan() {
		var m inMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch m.Type {
		case "system":
			if m.Subtype == "init" && o.OnEvent != nil {
				o.OnEvent(Event{Kind: "init"})
			}
		case "assistant":
			for _, c := range m.Message.Content {
				if c.Type == "text" && c.Text != "" && o.OnEvent != nil {
					o.OnEvent(Event{Kind: "assistant", Text: c.Text})
				}
			}
		case "control_request":
			var req canUseTool
			_ = json.Unmarshal(m.Request, &req)
			if req.Subtype != "can_use_tool" {
				_ = w.send(controlResponse{Type: "control_response", Response: responseBody{Subtype: "error",
					RequestID: m.RequestID, Error: fmt.Sprintf("arbor does not handle %q requests", req.Subtype)}})
				continue
			}
			id := m.RequestID
			perms.Go(func() { // a person may take a while; keep reading
				allow, msg := false, "no permission policy"
				if o.Permit != nil {
					allow, msg = o.Permit(pctx, req.ToolName, req.ToolUseID, req.Input)
				}
				rep := permissionReply{Behavior: "deny", Message: msg}
				if allow {
					in := req.Input
					if len(in) == 0 || string(in) == "null" {
						in = json.RawMessage("{}")
					}
					rep = permissionReply{Behavior: "allow", UpdatedInput: in}
				}
				_ = w.send(controlResponse{Type: "control_response", Response: responseBody{Subtype: "success", RequestID: id, Response: rep}})
			})
		case "result":
			// Spends add up: each is what was used since the previous
			// result (an interrupt's result may follow the turn's own).
			u, cost := m.spend()
			res = Result{Text: m.Result, IsError: m.IsError, SessionID: m.SessionID,
				Usage: res.Usage.Add(u), CostUSD: res.CostUSD + cost}
			if !got {
				close(gotResult)
			}
			got = true
			if o.OnEvent != nil {
				o.OnEvent(Event{Kind: "result", Text: m.Result})
			}
			w.close() // the turn is over: the CLI exits
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	pcancel()
	perms.Wait()
	waitErr := cmd.Wait()
	close(exited)
	wg.Wait()
	w.close()
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // whatever it left behind (its MCP servers)
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("claude code interrupted: %w", context.Cause(ctx))
	case !got:
		return Result{}, fmt.Errorf("%w (%v): %s", ErrNoResult, waitErr, bytes.TrimSpace(stderr.Bytes()))
	}
	return res, nil
}

// writer serializes the lines written to the CLI's stdin.
type writer struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

func (w *writer) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return io.ErrClosedPipe
	}
	_, err = w.w.Write(append(b, '\n'))
	return err
}

func (w *writer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		_ = w.w.Close()
	}
}

// tailBuffer keeps the last 8 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 8<<10 {
		t.b = t.b[len(t.b)-8<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}

// mcpConfigFile writes the CLI's MCP configuration (arbor's server) to a
// file only the user reads, for --mcp-config: given as a string, it would
// be on the CLI's command line, which every user of the machine can read,
// with the server's environment in it. The caller removes the file.
func mcpConfigFile(o Options) (string, error) {
	cfg, err := json.Marshal(mcpConfig{MCPServers: map[string]mcpServer{
		"arbor": {Command: o.MCPCommand, Args: o.MCPArgs, Env: o.MCPEnv},
	}})
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "arbor-mcp-*.json") // mode 0600
	if err != nil {
		return "", fmt.Errorf("claude-code: MCP config: %w", err)
	}
	if _, err := f.Write(cfg); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("claude-code: MCP config: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("claude-code: MCP config: %w", err)
	}
	return f.Name(), nil
}
