//go:build unix

package streamjson_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestSDKMCPServers runs the Claude Agent SDK's query() with mcpServers
// holding a stdio server (files: shout) and an in-process one
// (createSdkMcpServer calc: add), against the real Claude Code CLI and
// against arbor, both on the scripted model server, which calls both
// tools. For both it checks that each call was approved through
// canUseTool, reached its server and came back to the model, that
// system/init and mcpServerStatus() report both servers connected, and
// that the mcp_message requests on the control channel are the real
// CLI's: with the SDK's manifests only tools/call; without them the
// handshake (initialize, notifications/initialized, tools/list) first.
func TestSDKMCPServers(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)
	realBin := realClaudeCode(t)
	realEnv := map[string]string{"ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ARBOR_MODEL": ""}

	for _, tc := range []struct {
		name        string
		noManifests bool
		methods     []string
	}{
		{"manifests", false, []string{"tools/call"}},
		{"no-manifests", true, []string{"initialize", "notifications/initialized", "tools/list", "tools/call"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := driverOptions{NoManifests: tc.noManifests}
			for _, side := range []struct {
				name string
				bin  string
				env  map[string]string
			}{{"real CLI", realBin, realEnv}, {"arbor", h.bin, nil}} {
				rec := newRecorder(t, side.bin)
				srv := llmtest.NewServer(
					llmtest.Turn{ToolCalls: []llmtest.ToolCall{
						{ID: "toolu_s", Name: "mcp__files__shout", Input: map[string]any{"text": "hi"}},
						{ID: "toolu_a", Name: "mcp__calc__add", Input: map[string]any{"a": 2, "b": 3}},
					}},
					llmtest.Turn{Text: "done"},
				)
				r := (&sdkHarness{bin: rec.bin, driverDir: h.driverDir, script: "mcp.mjs"}).run(t, "drive", srv, nil, side.env, o)
				if e := r.end(t); e.Driver != "done" {
					r.fatalf(t, "%s: driver ended with %s %q; want done", side.name, e.Driver, e.Message)
				}
				checkSDKMCPRun(t, side.name, r, srv)
				if got := rec.mcpMethods(t, "calc"); !slices.Equal(got, tc.methods) {
					r.fatalf(t, "%s: mcp_message requests to calc: %q; want %q (as recorded from the real CLI)", side.name, got, tc.methods)
				}
			}
		})
	}
}

// checkSDKMCPRun checks one run of mcp.mjs.
func checkSDKMCPRun(t *testing.T, side string, r *sdkRun, srv *llmtest.Server) {
	t.Helper()
	r.requireDone(t)
	var asked []string
	for _, e := range r.driverEvents("can_use_tool") {
		asked = append(asked, e.ToolName)
	}
	if slices.Sort(asked); !slices.Equal(asked, []string{"mcp__calc__add", "mcp__files__shout"}) {
		r.fatalf(t, "%s: canUseTool asked for %q; want both MCP tools", side, asked)
	}
	if ran := r.driverEvents("sdk_tool"); len(ran) != 1 || string(ran[0].Input) != `{"a":2,"b":3}` {
		r.fatalf(t, "%s: the in-process add ran %d times (%+v); want once with {a:2,b:3}", side, len(ran), ran)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		r.fatalf(t, "%s: %d model requests; want 2", side, len(reqs))
	}
	var offered []string
	for _, ts := range reqs[0].Tools {
		offered = append(offered, ts.Name)
	}
	for _, want := range []string{"mcp__files__shout", "mcp__calc__add"} {
		if !slices.Contains(offered, want) {
			r.fatalf(t, "%s: the model was offered %q; want %s among them", side, offered, want)
		}
	}
	results := map[string]*llm.ToolResult{}
	for _, m := range reqs[1].Messages {
		for _, p := range m.Parts {
			if p.Type == llm.PartToolResult && p.ToolResult != nil {
				results[p.ToolResult.CallID] = p.ToolResult
			}
		}
	}
	for id, want := range map[string]string{"toolu_s": "HI!", "toolu_a": "sum: 5"} {
		if got := results[id]; got == nil || got.IsError || !strings.Contains(got.Content, want) {
			r.fatalf(t, "%s: the model got %+v for %s; want a result holding %q", side, got, id, want)
		}
	}

	init := firstOf(r.rawMessages(t), "system", "init")
	servers, _ := json.Marshal(init["mcp_servers"])
	for _, want := range []string{`{"name":"files","source":"dynamic","status":"connected"}`, `{"name":"calc","source":"sdk","status":"connected"}`} {
		if !strings.Contains(string(servers), want) {
			r.fatalf(t, "%s: init.mcp_servers = %s; want %s in it", side, servers, want)
		}
	}

	var status []struct {
		Name       string `json:"name"`
		Status     string `json:"status"`
		Transport  string `json:"transport"`
		Source     string `json:"source"`
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var rec struct {
			Driver  string          `json:"driver"`
			Servers json.RawMessage `json:"servers"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Driver == "mcp_status" {
			if err := json.Unmarshal(rec.Servers, &status); err != nil {
				r.fatalf(t, "%s: mcpServerStatus() = %s: %v", side, rec.Servers, err)
			}
		}
	}
	got := map[string]string{}
	for _, s := range status {
		tools := ""
		for _, tl := range s.Tools {
			tools += tl.Name
		}
		got[s.Name] = strings.Join([]string{s.Status, s.Transport, s.Source, s.ServerInfo.Name, s.ServerInfo.Version, tools}, " ")
	}
	want := map[string]string{"files": "connected stdio dynamic shouter 2.0.0 shout", "calc": "connected sdk sdk calc 1.0.0 add"}
	if len(got) != 2 || got["files"] != want["files"] || got["calc"] != want["calc"] {
		r.fatalf(t, "%s: mcpServerStatus() = %q; want %q", side, got, want)
	}
}

// recorder runs a CLI behind a shell script that copies its stdout, so
// the test sees the control requests it sent the SDK.
type recorder struct {
	bin, out string
}

func newRecorder(t *testing.T, cli string) *recorder {
	t.Helper()
	dir := t.TempDir()
	r := &recorder{bin: filepath.Join(dir, "cli"), out: filepath.Join(dir, "stdout.jsonl")}
	script := "#!/bin/sh\n\"" + cli + "\" \"$@\" | tee \"" + r.out + "\"\n"
	if err := os.WriteFile(r.bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// mcpMethods lists, in order, the methods (or "response") of the
// mcp_message requests the CLI sent to server.
func (r *recorder) mcpMethods(t *testing.T, server string) []string {
	t.Helper()
	b, err := os.ReadFile(r.out)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range strings.SplitSeq(string(b), "\n") {
		var m struct {
			Type    string `json:"type"`
			Request struct {
				Subtype    string `json:"subtype"`
				ServerName string `json:"server_name"`
				Message    struct {
					Method string `json:"method"`
				} `json:"message"`
			} `json:"request"`
		}
		if json.Unmarshal([]byte(l), &m) != nil || m.Type != "control_request" || m.Request.Subtype != "mcp_message" || m.Request.ServerName != server {
			continue
		}
		method := m.Request.Message.Method
		if method == "" {
			method = "response"
		}
		out = append(out, method)
	}
	return out
}

// firstOf returns the first message of type typ (and subtype, when not "").
func firstOf(ms []map[string]any, typ, subtype string) map[string]any {
	for _, m := range ms {
		if m["type"] == typ && (subtype == "" || m["subtype"] == subtype) {
			return m
		}
	}
	return nil
}

// rawMessages are the SDK messages of a run as JSON objects.
func (r *sdkRun) rawMessages(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["driver"] != nil {
			continue
		}
		out = append(out, m)
	}
	return out
}
