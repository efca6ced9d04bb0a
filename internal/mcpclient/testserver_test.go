package mcpclient

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the stdio test server: run with
// ARBOR_MCP_TEST_SERVER=1 it serves newTestServer over stdin/stdout.
// ARBOR_MCP_TEST_SLOW delays the start; ARBOR_MCP_TEST_PIDFILE receives
// its pid.
func TestMain(m *testing.M) {
	if os.Getenv("ARBOR_MCP_TEST_SERVER") == "1" {
		if f := os.Getenv("ARBOR_MCP_TEST_PIDFILE"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		fmt.Fprintln(os.Stderr, "test server on stderr: starting")
		if d, err := time.ParseDuration(os.Getenv("ARBOR_MCP_TEST_SLOW")); err == nil {
			time.Sleep(d)
		}
		if err := newTestServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type noArgs struct{}

// tinyPNG is a 1×1 PNG.
var tinyPNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R'}

func newTestServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "testsrv", Version: "0.1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the widget is broken"}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "image", Description: "Returns an image."},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture"},
				&mcp.ImageContent{MIMEType: "image/png", Data: tinyPNG},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "resource body"}},
				&mcp.ResourceLink{URI: "file:///big.bin", Name: "big"},
			}}, nil, nil
		})
	type weather struct {
		TempC int    `json:"temp_c"`
		Sky   string `json:"sky"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "structured", Description: "Structured output."},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, weather, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny"}}}, weather{TempC: 21, Sky: "clear"}, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "crash", Description: "Exits the server process."},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "grow", Description: "Adds the tool extra."},
		func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(srv, &mcp.Tool{Name: "extra", Description: "Added later."},
				func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra ran"}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil, nil
		})
	return srv
}

// TestServerSpec is the config entry that runs the test binary as a stdio
// MCP server; other packages' tests build the same with StdioTestServer.
func testServerEnv(extra map[string]string) map[string]string {
	env := map[string]string{"ARBOR_MCP_TEST_SERVER": "1"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}
