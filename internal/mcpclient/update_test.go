package mcpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// countedServer is the test server over HTTP.
type countedServer struct {
	url string
	// opens counts the requests that open a session (no session id).
	opens atomic.Int32
}

func newCountedServer(t *testing.T) *countedServer {
	t.Helper()
	c := &countedServer{}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			c.opens.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// TestUpdate: a new configuration stops the removed and changed servers,
// starts the changed and added ones, and leaves the unchanged one alone:
// its session and tools are the ones it had.
func TestUpdate(t *testing.T) {
	t.Parallel()
	keep, change1, change2, remove, add := newCountedServer(t), newCountedServer(t), newCountedServer(t), newCountedServer(t), newCountedServer(t)
	entry := func(c *countedServer) config.MCPServer { return config.MCPServer{Type: "http", URL: c.url} }
	b := setup(t, map[string]config.MCPServer{"keep": entry(keep), "change": entry(change1), "remove": entry(remove)}, nil)
	kept := b.tool(t, "mcp__keep__echo")
	v0, _ := b.m.Tools()
	keepOpens, oldOpens := keep.opens.Load(), change1.opens.Load()

	moved := entry(keep)
	moved.Source = "another file" // the same server, declared elsewhere
	b.m.Update(map[string]config.MCPServer{"keep": moved, "change": entry(change2), "add": entry(add)})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.m.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}

	var got []string
	for _, s := range b.m.Status() {
		got = append(got, s.Name+" "+string(s.State))
	}
	if want := []string{"add connected", "change connected", "keep connected"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("status after Update = %q; want %q", got, want)
	}
	if keep.opens.Load() != keepOpens || change1.opens.Load() != oldOpens {
		t.Fatalf("session openings: keep %d → %d, old change %d → %d; want no new ones", keepOpens, keep.opens.Load(), oldOpens, change1.opens.Load())
	}
	if change2.opens.Load() == 0 || add.opens.Load() == 0 {
		t.Fatalf("session openings: new change %d, add %d; want both connected", change2.opens.Load(), add.opens.Load())
	}
	if b.tool(t, "mcp__keep__echo") != kept {
		t.Fatal("the unchanged server's tools were replaced")
	}
	v1, tools := b.m.Tools()
	if v1 == v0 {
		t.Fatal("the tools' version did not change")
	}
	for _, tl := range tools {
		if n := tl.Info().Name; n == "mcp__remove__echo" {
			t.Fatalf("the removed server's tool %s is still offered", n)
		}
	}
	if res := call(t, b.tool(t, "mcp__change__echo"), `{"text":"new"}`); res.IsError || res.Content != "echo: new" {
		t.Fatalf("the changed server's echo = %+v", res)
	}
	if res := call(t, kept, `{"text":"still"}`); res.IsError || res.Content != "echo: still" {
		t.Fatalf("the unchanged server's echo = %+v", res)
	}

	b.m.Stop()
	addOpens := add.opens.Load()
	b.m.Update(map[string]config.MCPServer{"late": entry(add)}) // after Stop: nothing starts
	if add.opens.Load() != addOpens || len(b.m.Status()) != 3 {
		t.Fatalf("Update after Stop started something: status %+v", b.m.Status())
	}
}
