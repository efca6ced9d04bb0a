// Package mcptest is an MCP server for tests: tests of mcpclient and of
// the packages that wire it serve it over HTTP (httptest) or run their
// test binary as a stdio server (ServeStdioIfAsked in TestMain).
package mcptest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment of a test binary run as a stdio server.
const (
	// EnvServe set to "1" makes ServeStdioIfAsked serve.
	EnvServe = "ARBOR_MCP_TEST_SERVER"
	// EnvSlow delays the start by a Go duration.
	EnvSlow = "ARBOR_MCP_TEST_SLOW"
	// EnvPIDFile receives the server's pid.
	EnvPIDFile = "ARBOR_MCP_TEST_PIDFILE"
)

// ServeStdioIfAsked serves NewServer over stdin/stdout and exits when the
// environment asks for it (EnvServe=1); otherwise it returns. Call it
// first in TestMain.
func ServeStdioIfAsked() {
	if os.Getenv(EnvServe) != "1" {
		return
	}
	if f := os.Getenv(EnvPIDFile); f != "" {
		_ = os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600)
	}
	fmt.Fprintln(os.Stderr, "test server on stderr: starting")
	if d, err := time.ParseDuration(os.Getenv(EnvSlow)); err == nil {
		time.Sleep(d)
	}
	if err := NewServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

type echoArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type noArgs struct{}

// TinyPNG is a 1×1 PNG.
var TinyPNG = []byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R'}

// NewServer returns the test server: tools echo (text), fail (isError),
// image (image, embedded resource and link blocks), structured
// (structuredContent), crash (exits the process) and grow (adds the tool
// extra, so the server sends list_changed).
func NewServer() *mcp.Server {
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
				&mcp.ImageContent{MIMEType: "image/png", Data: TinyPNG},
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
