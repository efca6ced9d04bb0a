package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

type bundle struct {
	m       *Manager
	changes chan struct{}
	logDir  string
}

// setup starts a Manager for servers; tweak adjusts the options.
func setup(t *testing.T, servers map[string]config.MCPServer, tweak func(*Options)) *bundle {
	t.Helper()
	b := &bundle{changes: make(chan struct{}, 1), logDir: t.TempDir()}
	o := Options{Servers: servers, Workspace: t.TempDir(), LogDir: b.logDir, StartTimeout: 60 * time.Second,
		Backoff: func(int) time.Duration { return 0 },
		OnChange: func() {
			select {
			case b.changes <- struct{}{}:
			default:
			}
		}}
	if tweak != nil {
		tweak(&o)
	}
	b.m = New(o)
	t.Cleanup(b.m.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := b.m.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	return b
}

// stdioServer is an entry running this test binary as a stdio server.
func stdioServer(t *testing.T, env map[string]string) config.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return config.MCPServer{Command: exe, Args: []string{"-test.run=^$"}, Env: testServerEnv(env)}
}

// waitFor waits, change by change, until cond holds (hang guard 60s).
func (b *bundle) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	guard := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-b.changes:
		case <-guard:
			t.Fatalf("timed out waiting for %s; status %+v", what, b.m.Status())
		}
	}
}

func (b *bundle) tool(t *testing.T, name string) tool.Tool {
	t.Helper()
	_, ts := b.m.Tools()
	for _, tl := range ts {
		if tl.Info().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d", name, len(ts))
	return nil
}

func call(t *testing.T, tl tool.Tool, input string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return tl.Run(ctx, tool.Call{ID: "c1", Input: json.RawMessage(input)})
}

func TestStdioServer(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"test": stdioServer(t, nil)}, nil)

	st := b.m.Status()
	if len(st) != 1 || st[0].State != StateConnected || st[0].ServerName != "testsrv" || st[0].Transport != "stdio" {
		t.Fatalf("status = %+v", st)
	}
	if len(st[0].Tools) != 6 || st[0].Tools[0].Name != "mcp__test__crash" {
		t.Fatalf("tools = %+v", st[0].Tools)
	}

	t.Run("text result and schema", func(t *testing.T) {
		echo := b.tool(t, "mcp__test__echo")
		info := echo.Info()
		if info.Kind != tool.KindExecute || !strings.Contains(string(info.Schema), `"text"`) || info.Description != "Echo the text." {
			t.Fatalf("info = %+v, schema %s", info, info.Schema)
		}
		if res := call(t, echo, `{"text":"hi"}`); res.IsError || res.Content != "echo: hi" {
			t.Fatalf("result = %+v", res)
		}
	})

	t.Run("isError is a tool error", func(t *testing.T) {
		res := call(t, b.tool(t, "mcp__test__fail"), `{}`)
		if !res.IsError || res.Content != "the widget is broken" {
			t.Fatalf("result = %+v", res)
		}
	})

	t.Run("image, resource and link blocks", func(t *testing.T) {
		res := call(t, b.tool(t, "mcp__test__image"), `{}`)
		if res.IsError || len(res.Images) != 1 || res.Images[0].MediaType != "image/png" {
			t.Fatalf("result = %+v", res)
		}
		if res.Images[0].Data != "iVBORw0KGgoAAAANSUhEUg==" {
			t.Fatalf("image data = %q, want the PNG base64-encoded", res.Images[0].Data)
		}
		for _, want := range []string{"a picture", "[resource file:///notes.txt (text/plain)]\nresource body", "[resource link: big file:///big.bin]"} {
			if !strings.Contains(res.Content, want) {
				t.Fatalf("content %q lacks %q", res.Content, want)
			}
		}
	})

	t.Run("structuredContent", func(t *testing.T) {
		res := call(t, b.tool(t, "mcp__test__structured"), `{}`)
		if res.Content != "sunny\n{\"sky\":\"clear\",\"temp_c\":21}" {
			t.Fatalf("content = %q", res.Content)
		}
	})

	t.Run("list_changed updates the tools", func(t *testing.T) {
		v0, _ := b.m.Tools()
		if res := call(t, b.tool(t, "mcp__test__grow"), `{}`); res.Content != "grown" {
			t.Fatalf("grow = %+v", res)
		}
		b.waitFor(t, "the extra tool", func() bool {
			v, ts := b.m.Tools()
			return v != v0 && len(ts) == 7
		})
		if res := call(t, b.tool(t, "mcp__test__extra"), `{}`); res.Content != "extra ran" {
			t.Fatalf("extra = %+v", res)
		}
		reg := tool.NewRegistry()
		reg.AddSource(b.m, nil)
		if _, ok := reg.Lookup("mcp__test__extra"); !ok {
			t.Fatal("the registry does not offer the new tool")
		}
	})

	t.Run("stderr goes to the log file", func(t *testing.T) {
		data, err := os.ReadFile(LogFile(b.logDir, "test"))
		if err != nil || !strings.Contains(string(data), "test server on stderr: starting") {
			t.Fatalf("log = %q, %v", data, err)
		}
	})
}

func TestCrashAndRestart(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	gate := make(chan struct{})
	b := setup(t, map[string]config.MCPServer{"test": stdioServer(t, map[string]string{mcptest.EnvPIDFile: pidFile})},
		func(o *Options) {
			o.Backoff = func(int) time.Duration {
				<-gate // the test looks at the server while it is down
				return 0
			}
		})
	firstPID := readPID(t, pidFile)

	res := call(t, b.tool(t, "mcp__test__crash"), `{}`)
	if !res.IsError || !strings.Contains(res.Content, "calling crash failed") {
		t.Fatalf("crash result = %+v", res)
	}
	b.waitFor(t, "the server to be down", func() bool { return b.m.Status()[0].State == StatePending })
	if st := b.m.Status()[0]; !strings.Contains(st.Error, "disconnected") {
		t.Fatalf("status = %+v", st)
	}
	// Its tools stay offered; their calls fail cleanly.
	res = call(t, b.tool(t, "mcp__test__echo"), `{"text":"x"}`)
	if !res.IsError || !strings.Contains(res.Content, "not connected") || !strings.Contains(res.Content, "pending") {
		t.Fatalf("call while down = %+v", res)
	}
	close(gate)
	b.waitFor(t, "the restart", func() bool {
		st := b.m.Status()[0]
		return st.State == StateConnected && st.Restarts == 1
	})
	if res := call(t, b.tool(t, "mcp__test__echo"), `{"text":"back"}`); res.IsError || res.Content != "echo: back" {
		t.Fatalf("after restart = %+v", res)
	}
	if pid := readPID(t, pidFile); pid == firstPID {
		t.Fatalf("the server was not restarted (pid %d)", pid)
	}
}

func TestGivesUpAfterMaxRestarts(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"test": stdioServer(t, nil)}, func(o *Options) { o.MaxRestarts = -1 })
	call(t, b.tool(t, "mcp__test__crash"), `{}`)
	b.waitFor(t, "failed", func() bool { return b.m.Status()[0].State == StateFailed })
	if _, ts := b.m.Tools(); len(ts) != 0 {
		t.Fatalf("a failed server still offers %d tools", len(ts))
	}
}

func TestSlowStartTimesOut(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The slow server's timeout is far below its delay and far above the
	// time a loaded machine needs to start it and write its pid; the fast
	// one has the default.
	slow := stdioServer(t, map[string]string{mcptest.EnvSlow: "10m", mcptest.EnvPIDFile: pidFile})
	slow.StartTimeout = 10 * time.Second
	b := setup(t, map[string]config.MCPServer{"slow": slow, "fast": stdioServer(t, nil)}, nil)
	st := b.m.Status()
	if st[0].Name != "fast" || st[0].State != StateConnected {
		t.Fatalf("fast = %+v", st[0])
	}
	if st[1].State != StateFailed || !strings.Contains(st[1].Error, "did not start within 10s (start_timeout)") {
		t.Fatalf("slow = %+v", st[1])
	}
	if pid := readPID(t, pidFile); processAlive(pid) {
		t.Fatalf("the slow server (pid %d) outlived its failed start", pid)
	}
}

func TestStopKillsServers(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := setup(t, map[string]config.MCPServer{"test": stdioServer(t, map[string]string{mcptest.EnvPIDFile: pidFile})}, nil)
	pid := readPID(t, pidFile)
	b.m.Stop()
	b.m.Stop()
	if processAlive(pid) {
		t.Fatalf("server pid %d alive after Stop", pid)
	}
}

func TestBadServers(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{
		"missing": {Command: "/nonexistent/mcp-server"},
		"secret":  {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${ARBOR_TEST_UNSET_TOKEN}"}},
		"off":     {Command: "x", Disabled: true},
	}, func(o *Options) { o.Getenv = func(string) string { return "" } })
	st := b.m.Status()
	if st[0].Name != "missing" || st[0].State != StateFailed || !strings.Contains(st[0].Error, "starting /nonexistent/mcp-server") {
		t.Fatalf("missing = %+v", st[0])
	}
	if st[1].State != StateDisabled {
		t.Fatalf("off = %+v", st[1])
	}
	if st[2].State != StateFailed || !strings.Contains(st[2].Error, "ARBOR_TEST_UNSET_TOKEN is not set") {
		t.Fatalf("secret = %+v", st[2])
	}
}

func TestHTTPServer(t *testing.T) {
	t.Parallel()
	var auth = make(chan string, 100)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case auth <- r.Header.Get("Authorization"):
		default:
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b := setup(t, map[string]config.MCPServer{
		"web": {Type: "http", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
	}, func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "TOKEN" {
				return "t0ken"
			}
			return ""
		}
	})
	if st := b.m.Status()[0]; st.State != StateConnected || st.Transport != "http" {
		t.Fatalf("status = %+v", st)
	}
	if got := <-auth; got != "Bearer t0ken" {
		t.Fatalf("Authorization = %q", got)
	}
	if res := call(t, b.tool(t, "mcp__web__echo"), `{"text":"web"}`); res.Content != "echo: web" {
		t.Fatalf("echo = %+v", res)
	}
	if res := call(t, b.tool(t, "mcp__web__fail"), `{}`); !res.IsError {
		t.Fatalf("fail = %+v", res)
	}
	v0, _ := b.m.Tools()
	call(t, b.tool(t, "mcp__web__grow"), `{}`)
	b.waitFor(t, "list_changed over HTTP", func() bool { v, ts := b.m.Tools(); return v != v0 && len(ts) == 7 })
}

func TestToolName(t *testing.T) {
	t.Parallel()
	if got := ToolName("my.server", "get file"); got != "mcp__my_server__get_file" {
		t.Fatal(got)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(data))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// TestConfinedServer: a stdio server the config confines runs in the
// sandbox (its own PID namespace, writes only in the workspace) and its
// tools work; one it does not confine runs as before.
func TestConfinedServer(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.Detect(); err != nil {
		t.Fatalf("%v (bash scripts/test.sh installs bubblewrap)", err)
	}
	ws, outside := t.TempDir(), t.TempDir()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	boxed := stdioServer(t, map[string]string{mcptest.EnvPIDFile: filepath.Join(outside, "boxed.pid")})
	boxed.Sandbox = true
	inWS := stdioServer(t, map[string]string{mcptest.EnvPIDFile: filepath.Join(ws, "inws.pid")})
	inWS.Sandbox = true
	free := stdioServer(t, map[string]string{mcptest.EnvPIDFile: filepath.Join(outside, "free.pid")})
	b := setup(t, map[string]config.MCPServer{"boxed": boxed, "inws": inWS, "free": free}, func(o *Options) {
		o.Workspace, o.Sandbox = ws, func() *sandbox.Sandbox { return sb }
		o.Confined = func(s config.MCPServer) bool { return s.Sandbox }
	})
	for _, name := range []string{"boxed", "inws", "free"} {
		if res := call(t, b.tool(t, "mcp__"+name+"__echo"), `{"text":"hi"}`); res.IsError || res.Content != "echo: hi" {
			t.Fatalf("%s: echo = %+v", name, res)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "boxed.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the confined server wrote outside the workspace: %v", err)
	}
	pid, err := os.ReadFile(filepath.Join(ws, "inws.pid"))
	if n, _ := strconv.Atoi(string(pid)); err != nil || n < 1 || n > 10 {
		t.Fatalf("the confined server's pid %q (%v): want a small pid of its own namespace", pid, err)
	}
	if _, err := os.Stat(filepath.Join(outside, "free.pid")); err != nil {
		t.Fatalf("the unconfined server could not write its pid file: %v", err)
	}
	log, _ := os.ReadFile(LogFile(b.logDir, "boxed"))
	if !strings.Contains(string(log), "(confined by the sandbox)") {
		t.Fatalf("the log does not say the server is confined:\n%s", log)
	}
}

// TestEnabledAndDisabledTools: an entry's enabled_tools and
// disabled_tools choose which of the server's tools are offered, by the
// server's name or arbor's; status lists only those.
func TestEnabledAndDisabledTools(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil))
	t.Cleanup(srv.Close)
	var (
		mu       sync.Mutex
		warnings []string
	)
	b := setup(t, map[string]config.MCPServer{
		"a": {Type: "http", URL: srv.URL, EnabledTools: []string{"echo", "mcp__a__fail", "image"}, DisabledTools: []string{"image"}},
		"b": {Type: "http", URL: srv.URL, DisabledTools: []string{"mcp__b__echo", "crash"}},
		// A typo in either list is said, once, with what the server has.
		"c": {Type: "http", URL: srv.URL, EnabledTools: []string{"ecko", "mcp__c__fail"}, DisabledTools: []string{"fial"}},
	}, func(o *Options) {
		o.Warn = func(msg string) {
			mu.Lock()
			defer mu.Unlock()
			warnings = append(warnings, msg)
		}
	})
	mu.Lock()
	reqWarnings := slices.Clone(warnings)
	mu.Unlock()
	if len(reqWarnings) != 1 || !strings.Contains(reqWarnings[0], "MCP server c does not offer the tools its entry names in enabled_tools: ecko; disabled_tools: fial (its tools: crash, echo, fail, grow, image, structured)") {
		t.Fatalf("warnings: %q", reqWarnings)
	}
	var names []string
	_, ts := b.m.Tools()
	for _, tl := range ts {
		names = append(names, tl.Info().Name)
	}
	got := strings.Join(names, " ")
	want := "mcp__a__echo mcp__a__fail mcp__b__fail mcp__b__grow mcp__b__image mcp__b__structured mcp__c__fail"
	if got != want {
		t.Fatalf("tools offered:\n got %s\nwant %s", got, want)
	}
	if st := b.m.Status()[0]; len(st.Tools) != 2 {
		t.Fatalf("status of a lists %d tools: %+v", len(st.Tools), st.Tools)
	}
}
