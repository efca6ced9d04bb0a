package streamjson_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// TestSDKMCPOverControlChannel plays the Claude Agent SDK's side of an
// in-process server: the test relays arbor's mcp_message requests to a Go
// MCP server and its answers back. The handshake crosses the channel (no
// manifests), the server's list_changed reaches arbor as the client's
// mcp_message request and arbor lists the tools again, and a call the
// client fails is a tool error the model sees.
func TestSDKMCPOverControlChannel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "c_grow", Name: "mcp__calc__grow", Input: map[string]any{}}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "c_echo", Name: "mcp__calc__echo", Input: map[string]any{"text": "x"}}}},
		llmtest.Turn{Text: "done"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcptest.NewServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	toServer, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}

	b.Send(`{"type":"control_request","request_id":"i-1","request":{"subtype":"initialize","sdkMcpServers":["calc"]}}`)
	b.Send(user("use calc"))
	var methods []string
	lists, acks, ended := 0, 0, false
	for !ended || lists < 2 || acks < 1 {
		o := b.Next(func(o out) bool {
			return o.Type == "result" || o.Type == "control_request" && o.Request.Subtype == "mcp_message" ||
				o.Type == "control_response" && o.Response.RequestID == "n-1"
		})
		if o.Type == "control_response" {
			if o.Response.Subtype != "success" || !strings.Contains(string(o.Response.Response), `"mcp_response"`) {
				t.Fatalf("arbor's answer to the client's mcp_message: %s", o.raw)
			}
			acks++
			continue
		}
		if o.Type == "result" {
			if o.IsError || o.Result != "done" {
				t.Fatalf("result %s", o.raw)
			}
			ended = true
			continue
		}
		var req struct {
			Request struct {
				ServerName string          `json:"server_name"`
				Message    json.RawMessage `json:"message"`
			} `json:"request"`
		}
		if err := json.Unmarshal([]byte(o.raw), &req); err != nil || req.Request.ServerName != "calc" {
			t.Fatalf("mcp_message %s: %v", o.raw, err)
		}
		m, err := jsonrpc.DecodeMessage(req.Request.Message)
		if err != nil {
			t.Fatalf("mcp_message's message %s: %v", req.Request.Message, err)
		}
		call, _ := m.(*jsonrpc.Request)
		if call == nil {
			t.Fatalf("arbor sent the server %s; want requests and notifications only", req.Request.Message)
		}
		methods = append(methods, call.Method)
		if call.Method == "tools/list" {
			lists++
		}
		if !call.ID.IsValid() {
			if err := toServer.Write(ctx, m); err != nil {
				t.Fatal(err)
			}
			b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + o.RequestID + `","response":{"mcp_response":{"jsonrpc":"2.0","result":{},"id":0}}}}`)
			continue
		}
		if call.Method == "tools/call" && strings.Contains(string(call.Params), `"echo"`) {
			b.Send(`{"type":"control_response","response":{"subtype":"error","request_id":"` + o.RequestID + `","error":"the tool handler threw"}}`)
			continue
		}
		if err := toServer.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
		// grow adds a tool: the server also speaks on its own
		// (list_changed), before or after its answer, and the client
		// passes that on as its mcp_message request after the answer.
		grow := call.Method == "tools/call" && strings.Contains(string(call.Params), `"grow"`)
		var answer, note []byte
		for answer == nil || grow && note == nil {
			back, err := toServer.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := jsonrpc.EncodeMessage(back)
			if _, ok := back.(*jsonrpc.Response); ok {
				answer = raw
				continue
			}
			if !grow || !strings.Contains(string(raw), "notifications/tools/list_changed") {
				t.Fatalf("after %s the server sent %s", call.Method, raw)
			}
			note = raw
		}
		b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + o.RequestID + `","response":{"mcp_response":` + string(answer) + `}}}`)
		if note != nil {
			b.Send(`{"type":"control_request","request_id":"n-1","request":{"subtype":"mcp_message","server_name":"calc","message":` + string(note) + `}}`)
		}
	}
	b.Close()

	if want := "initialize notifications/initialized tools/list tools/call"; !strings.HasPrefix(strings.Join(methods, " "), want) {
		t.Fatalf("arbor sent the server %q; want it to start with %q", methods, want)
	}
	var echo *llm.ToolResult
	for _, m := range srv.Requests()[2].Messages {
		for _, p := range m.Parts {
			if p.Type == llm.PartToolResult && p.ToolResult != nil && p.ToolResult.CallID == "c_echo" {
				echo = p.ToolResult
			}
		}
	}
	if echo == nil || !echo.IsError || !strings.Contains(echo.Content, "the tool handler threw") {
		t.Fatalf("the model got %+v for the call the client failed; want a tool error with the client's message", echo)
	}
}
