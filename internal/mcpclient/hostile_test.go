package mcpclient

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// envHostile names the scenario a test binary run as a hostile stdio
// server plays (see hostileScenarios).
const envHostile = "ARBOR_MCP_HOSTILE"

// envHostileChildPID makes the hostile server start a child process
// and write its pid to the file it names.
const envHostileChildPID = "ARBOR_MCP_HOSTILE_CHILD"

// envHostileFIFO names a FIFO the hostile server writes a line to when a
// call it will never answer arrived.
const envHostileFIFO = "ARBOR_MCP_HOSTILE_FIFO"

// hostileScenario is a raw JSON-RPC server that misbehaves: it writes
// its lines by hand, so it can send what no SDK would.
type hostileScenario struct {
	// before is written to stdout before anything else.
	before []string
	// tools is the tools/list result's tools array.
	tools string
	// call answers tools/call: the lines to write (the result's JSON
	// goes in with %s), or nil to never answer.
	call func(name string, args json.RawMessage, id json.RawMessage) []string
}

var hostileScenarios = map[string]hostileScenario{
	// Tools whose names and schemas no provider accepts as they are.
	"names": {
		tools: `[` +
			`{"name":"` + strings.Repeat("a", 100) + `","inputSchema":{"type":"object"}},` +
			`{"name":"` + strings.Repeat("a", 99) + `b","inputSchema":{"type":"object"}},` +
			`{"name":"get.file","inputSchema":{"type":"object"}},` +
			`{"name":"get_file","inputSchema":{"type":"object"}},` +
			`{"name":"","inputSchema":{"type":"object"}},` +
			`{"name":"scalar","inputSchema":5},` +
			`{"name":"string","inputSchema":{"type":"string"}},` +
			`{"name":"props","inputSchema":{"type":"object","properties":"oops"}},` +
			`{"name":"required","inputSchema":{"type":"object","required":"x"}},` +
			`{"name":"notype","inputSchema":{"properties":{"x":{"type":"string"}}}},` +
			`{"name":"wordy","description":"` + strings.Repeat("d", 1<<20) + `","inputSchema":{"type":"object"}},` +
			`{"name":"fat","inputSchema":{"type":"object","properties":{"x":{"type":"string","description":"` + strings.Repeat("s", 1<<20) + `"}}}}` +
			`]`,
		call: func(name string, _, id json.RawMessage) []string {
			return []string{result(id, `{"content":[{"type":"text","text":"called `+name+`"}]}`)}
		},
	},
	// A server that prints a banner and debug lines on stdout, as many
	// do, before and between its messages.
	"chatty": {
		before: []string{"Starting server on stdio...", "", "  [debug] listening"},
		tools:  `[{"name":"echo","inputSchema":{"type":"object"}}]`,
		call: func(name string, _, id json.RawMessage) []string {
			return []string{"calling " + name + " now", "\t", result(id, `{"content":[{"type":"text","text":"called `+name+`"}]}`), "done."}
		},
	},
	// Results no provider takes as they are, and calls that never end.
	"results": {
		tools: `[{"name":"utf8","inputSchema":{"type":"object"}},{"name":"images","inputSchema":{"type":"object"}},` +
			`{"name":"huge","inputSchema":{"type":"object"}},{"name":"hang","inputSchema":{"type":"object"}},` +
			`{"name":"echo","inputSchema":{"type":"object"}},{"name":"deafen","inputSchema":{"type":"object"}},` +
			`{"name":"null","inputSchema":{"type":"object"}},{"name":"odd","inputSchema":{"type":"object"}},` +
			`{"name":"blocks","inputSchema":{"type":"object"}}]`,
		call: func(name string, _, id json.RawMessage) []string {
			text := func(s string) string {
				b, _ := json.Marshal(s)
				return `{"type":"text","text":` + string(b) + `}`
			}
			image := func(mime string, data []byte) string {
				return `{"type":"image","mimeType":"` + mime + `","data":"` + base64.StdEncoding.EncodeToString(data) + `"}`
			}
			switch name {
			case "utf8":
				return []string{result(id, `{"content":[`+text(strings.Repeat("a", maxResultText-1)+strings.Repeat("é", 10))+`]}`)}
			case "images":
				blocks := []string{
					image("image/svg+xml", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`)),
					image("image/png", []byte("not a picture at all")),
					image("image/png", append(append([]byte(nil), mcptest.TinyPNG...), make([]byte, 6<<20)...)),
					image("image/jpeg", mcptest.TinyPNG), // a PNG it calls a JPEG
				}
				for range 30 {
					blocks = append(blocks, image("image/png", mcptest.TinyPNG))
				}
				return []string{result(id, `{"content":[`+strings.Join(blocks, ",")+`]}`)}
			case "huge":
				return []string{result(id, `{"content":[`+text(strings.Repeat("x", 20<<20))+`]}`)}
			case "blocks":
				// 20,000 small JSON texts and a structuredContent of 4 MiB.
				blocks := strings.Repeat(`{"type":"text","text":"1"},`, 20000)
				return []string{result(id, `{"content":[`+blocks+`{"type":"text","text":"end"}],"structuredContent":{"big":"`+strings.Repeat("s", 4<<20)+`"}}`)}
			case "null":
				return []string{result(id, `null`)}
			case "odd":
				return []string{result(id, `{"content":[{"type":"hologram","data":"x"},null,{"type":"text"}],"structuredContent":{"a":[1,2]}}`)}
			case "hang":
				// Tell the test the call arrived, then never answer.
				if f, err := os.OpenFile(os.Getenv(envHostileFIFO), os.O_WRONLY, 0); err == nil {
					f.WriteString("called\n")
					f.Close()
				}
				return nil
			}
			return []string{result(id, `{"content":[`+text("called "+name)+`]}`)}
		},
	},
	// Requests of the server's own while a call runs (ask), and floods
	// of notifications: 15,000 before the call's answer. (60,000 took
	// the SDK's decoder over the test's minute under -race on a loaded
	// machine: a flood is a flood at this size too, since arbor keeps
	// no queue of them to overflow, and list_changed is coalesced.)
	"asks": {
		tools: `[{"name":"ask","inputSchema":{"type":"object"}},{"name":"flood","inputSchema":{"type":"object"}}]`,
		call: func(name string, _, id json.RawMessage) []string {
			var lines []string
			for i := range 5000 {
				lines = append(lines,
					fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"line %d"}}`, i),
					fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":%d}}`, i, i),
					`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			}
			return append(lines, result(id, `{"content":[{"type":"text","text":"flooded"}]}`))
		},
	},
	// A server that says why on stderr and exits at start (see
	// serveHostileIfAsked).
	"dies": {},
	// A server that writes much on stderr (see serveHostileIfAsked).
	"noisy": {
		tools: `[{"name":"echo","inputSchema":{"type":"object"}}]`,
		call: func(name string, _, id json.RawMessage) []string {
			return []string{result(id, `{"content":[{"type":"text","text":"called `+name+`"}]}`)}
		},
	},
	// A tools/list never answered (see serveHostileIfAsked).
	"nolist": {},
	// A tools/list that never ends (see serveHostileIfAsked).
	"pages": {
		call: func(name string, _, id json.RawMessage) []string {
			return []string{result(id, `{"content":[{"type":"text","text":"called `+name+`"}]}`)}
		},
	},
}

// result is a JSON-RPC response line.
func result(id json.RawMessage, res string) string {
	return `{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + res + `}`
}

// serveHostileIfAsked plays the scenario envHostile names, if any, and
// exits.
func serveHostileIfAsked() {
	name := os.Getenv(envHostile)
	if name == "" {
		return
	}
	sc, ok := hostileScenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "no scenario %q\n", name)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	write := func(lines ...string) {
		for _, l := range lines {
			out.WriteString(l + "\n")
		}
		out.Flush()
	}
	if f := os.Getenv(envHostileChildPID); f != "" {
		// A server that starts a process of its own, which outlives it
		// unless its group is killed.
		child := exec.Command("sleep", "600")
		if err := child.Start(); err != nil {
			os.Exit(2)
		}
		_ = os.WriteFile(f, []byte(strconv.Itoa(child.Process.Pid)), 0o600)
	}
	if name == "dies" {
		fmt.Fprintln(os.Stderr, "npm error 404 Not Found - GET https://registry.npmjs.org/@acme%2fmcp-nothing")
		fmt.Fprintln(os.Stderr, "npm error 404  '@acme/mcp-nothing@*' is not in this registry.")
		os.Exit(1)
	}
	if name == "noisy" {
		// 25 MiB on stderr, its token among the last lines.
		w := bufio.NewWriter(os.Stderr)
		line := strings.Repeat("n", 1023) + "\n"
		for range 25 << 10 {
			w.WriteString(line)
		}
		fmt.Fprintf(w, "my token is %s\nnoisy: done\n", os.Getenv("SECRET"))
		w.Flush()
	}
	write(sc.before...)
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(0)
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &msg) != nil || msg.ID == nil {
			continue // a notification
		}
		switch msg.Method {
		case "initialize":
			write(result(msg.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}`))
		case "tools/list":
			if name == "nolist" {
				continue // never answered
			}
			if name == "pages" {
				// Page after page, never the last.
				var p struct {
					Params struct{ Cursor string } `json:"params"`
				}
				json.Unmarshal(line, &p)
				n, _ := strconv.Atoi(p.Params.Cursor)
				write(result(msg.ID, fmt.Sprintf(`{"tools":[{"name":"t%d","inputSchema":{"type":"object"}}],"nextCursor":"%d"}`, n, n+1)))
				continue
			}
			write(result(msg.ID, `{"tools":`+sc.tools+`}`))
		case "tools/call":
			if msg.Params.Name == "deafen" {
				// Answer, then read nothing more: arbor's writes fill the
				// pipe.
				write(result(msg.ID, `{"content":[{"type":"text","text":"deaf now"}]}`))
				select {}
			}
			if msg.Params.Name == "ask" {
				// Ask the client what arguments.method names, and answer
				// the call with the client's answer.
				var a struct{ Method string }
				json.Unmarshal(msg.Params.Arguments, &a)
				write(`{"jsonrpc":"2.0","id":"srv-1","method":"` + a.Method + `","params":{}}`)
				for {
					l, err := in.ReadBytes('\n')
					if err != nil {
						os.Exit(0)
					}
					var r struct{ ID string }
					if json.Unmarshal(l, &r) == nil && r.ID == "srv-1" {
						b, _ := json.Marshal(strings.TrimSpace(string(l)))
						write(result(msg.ID, `{"content":[{"type":"text","text":`+string(b)+`}]}`))
						break
					}
				}
				continue
			}
			write(sc.call(msg.Params.Name, msg.Params.Arguments, msg.ID)...)
		default:
			write(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}

// hostileServer is an entry running this test binary as the hostile
// server of scenario.
func hostileServer(t *testing.T, scenario string) config.MCPServer {
	s := stdioServer(t, nil)
	s.Env = map[string]string{envHostile: scenario}
	return s
}

// fifo makes a FIFO for envHostileFIFO.
func fifo(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNonJSONLinesOnStdout: a stdio server that prints lines that are no
// JSON-RPC message on stdout (a banner at start, debug lines between its
// answers) connects and its calls work, as with Claude Code; the lines
// are noted in its log.
func TestNonJSONLinesOnStdout(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"chatty": hostileServer(t, "chatty")}, nil)
	if st := b.m.Status()[0]; st.State != StateConnected {
		t.Fatalf("status = %+v", st)
	}
	for range 2 {
		if res := call(t, b.tool(t, "mcp__chatty__echo"), `{}`); res.IsError || res.Content != "called echo" {
			t.Fatalf("echo = %+v", res)
		}
	}
	b.m.Stop()
	log, err := os.ReadFile(LogFile(b.logDir, "chatty"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"Starting server on stdio..."`, `"[debug] listening"`, `"calling echo now"`, `"done."`} {
		if !strings.Contains(string(log), "not JSON-RPC, skipped: "+want) {
			t.Fatalf("the log does not note %s:\n%s", want, log)
		}
	}
}

// TestServerRequestsAndFloods: requests a server sends arbor while a call
// runs (sampling, elicitation, roots, an unknown method) are answered,
// so the server is not left waiting, and a flood of notifications (log
// messages, progress, list_changed) leaves the server's calls working
// and its tools as they were.
func TestServerRequestsAndFloods(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"asks": hostileServer(t, "asks")}, nil)
	for method, want := range map[string]string{
		"sampling/createMessage": `"error"`,
		"elicitation/create":     `"error"`,
		"roots/list":             `"result":{"roots":[]}`,
		"no/such":                `"error"`,
	} {
		res := call(t, b.tool(t, "mcp__asks__ask"), `{"method":"`+method+`"}`)
		if res.IsError || !strings.Contains(res.Content, want) {
			t.Fatalf("%s: the server got %q, want %s", method, res.Content, want)
		}
	}
	v0, _ := b.m.Tools()
	if res := call(t, b.tool(t, "mcp__asks__flood"), `{}`); res.IsError || res.Content != "flooded" {
		t.Fatalf("flood = %+v", res)
	}
	if res := call(t, b.tool(t, "mcp__asks__ask"), `{"method":"roots/list"}`); res.IsError {
		t.Fatalf("after the flood: %+v", res)
	}
	if v, ts := b.m.Tools(); v != v0 || len(ts) != 2 {
		t.Fatalf("the flood changed the tools: version %d → %d, %d tools", v0, v, len(ts))
	}
}

// TestServerChildrenDie: what a stdio server started dies with it, when
// arbor stops it and when it crashed and is restarted.
func TestServerChildrenDie(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child")
	srv := hostileServer(t, "results")
	srv.Env[envHostileChildPID] = pidFile
	b := setup(t, map[string]config.MCPServer{"kids": srv}, nil)
	first := readPID(t, pidFile)
	// The huge answer ends the connection: the server is restarted.
	call(t, b.tool(t, "mcp__kids__huge"), `{}`)
	b.waitFor(t, "the restart", func() bool { st := b.m.Status()[0]; return st.State == StateConnected && st.Restarts == 1 })
	testutil.RequireExited(t, first, time.Minute)
	second := readPID(t, pidFile)
	if second == first {
		t.Fatalf("the restarted server wrote no pid (%d)", first)
	}
	b.m.Stop()
	testutil.RequireExited(t, second, time.Minute)
}

// TestStderrLogIsBoundedAndRedacted: a server that floods stderr keeps
// working, its log takes at most two files of maxLogBytes (the newest
// output kept), and a token its configuration filled in from the
// environment is [REDACTED] in the log.
func TestStderrLogIsBoundedAndRedacted(t *testing.T) {
	t.Parallel()
	const token = "tok-0123456789"
	srv := hostileServer(t, "noisy")
	srv.Env["SECRET"] = "${HOSTILE_TOKEN}"
	b := setup(t, map[string]config.MCPServer{"noisy": srv}, func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "HOSTILE_TOKEN" {
				return token
			}
			return ""
		}
	})
	if res := call(t, b.tool(t, "mcp__noisy__echo"), `{}`); res.IsError || res.Content != "called echo" {
		t.Fatalf("echo = %+v", res)
	}
	b.m.Stop()
	var total int64
	for _, f := range []string{LogFile(b.logDir, "noisy"), LogFile(b.logDir, "noisy") + ".1"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(data))
		if strings.Contains(string(data), token) {
			t.Fatalf("%s holds the token", f)
		}
	}
	if total > 2*(10<<20) {
		t.Fatalf("the logs hold %d bytes, want at most 20 MiB", total)
	}
	cur, _ := os.ReadFile(LogFile(b.logDir, "noisy"))
	if !strings.Contains(string(cur), "my token is [REDACTED]\nnoisy: done\n") {
		t.Fatalf("the log does not end with the newest output: …%q", cur[max(0, len(cur)-200):])
	}
}

// TestExitAtStartSaysWhy: a stdio server that exits at start is failed
// with the last line it wrote on stderr in its error (npx's "not in this
// registry"), not only the protocol's EOF.
func TestExitAtStartSaysWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"gone": hostileServer(t, "dies")}, nil)
	st := b.m.Status()[0]
	if st.State != StateFailed || !strings.Contains(st.Error, `its stderr ended: "npm error 404  '@acme/mcp-nothing@*' is not in this registry."`) {
		t.Fatalf("status: %s, %s", st.State, st.Error)
	}
}

// TestToolsListNeverAnswered: a server that answers initialize and never
// tools/list holds the start (and so a headless session's ready) no
// longer than its start_timeout, and is killed with what it started.
func TestToolsListNeverAnswered(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child")
	srv := hostileServer(t, "nolist")
	srv.Env[envHostileChildPID] = pidFile
	srv.StartTimeout = 3 * time.Second
	b := setup(t, map[string]config.MCPServer{"mute": srv}, nil)
	if st := b.m.Status()[0]; st.State != StateFailed || !strings.Contains(st.Error, "did not start within 3s (start_timeout): listing tools") {
		t.Fatalf("status: %s, %s", st.State, st.Error)
	}
	testutil.RequireExited(t, readPID(t, pidFile), time.Minute)
}
