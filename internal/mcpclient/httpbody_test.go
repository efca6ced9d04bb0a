package mcpclient

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// TestHTTPAnswerLargerThanAMessage: an HTTP server whose JSON answer to a
// call runs past 16 MiB (the most arbor reads of one message, as over
// stdio and per SSE event) is read no further: the call fails with a
// tool error saying so. Before, the SDK read a JSON body whole, however
// large, into memory.
func TestHTTPAnswerLargerThanAMessage(t *testing.T) {
	t.Parallel()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() },
		&mcp.StreamableHTTPOptions{JSONResponse: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"name":"huge"`)) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		// An answer that runs on: 40 MiB of one string.
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`)
		chunk := strings.Repeat("x", 1<<20)
		for range 40 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	b := setup(t, map[string]config.MCPServer{"web": {Type: "http", URL: srv.URL}}, nil)
	// The test server has no tool huge: call it through echo's session.
	echo := b.tool(t, "mcp__web__echo").(*mcpTool)
	huge := &mcpTool{srv: echo.srv, remote: "huge", info: echo.info}
	res := call(t, huge, `{}`)
	if !res.IsError || !strings.Contains(res.Content, "larger than 16 MiB") {
		t.Fatalf("result = %.300s", res.Content)
	}
}

// TestHeadersStayWithTheServer: the entry's headers (its token) go only
// to the configured server's host: a redirect elsewhere gets none of
// them, as Go's client drops an Authorization it set itself on such a
// redirect.
func TestHeadersStayWithTheServer(t *testing.T) {
	t.Parallel()
	elsewhere := make(chan string, 100)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere <- r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		http.Error(w, "gone", http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	headers := map[string]string{"Authorization": "Bearer secret-token-1", "X-Api-Key": "secret-key-2"}
	b := setup(t, map[string]config.MCPServer{
		"home":  {Type: "http", URL: srv.URL + "/mcp", Headers: headers},
		"moved": {Type: "http", URL: srv.URL + "/moved", Headers: headers},
	}, nil)
	if st := b.m.Status(); st[0].State != StateConnected || st[1].State != StateFailed {
		t.Fatalf("status = %+v", st)
	}
	select {
	case got := <-elsewhere:
		if got != "" {
			t.Fatalf("the redirect's target got %q", got)
		}
	default:
		t.Fatal("the redirect was not followed")
	}
}
