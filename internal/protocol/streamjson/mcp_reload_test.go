package streamjson_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// TestReloadRestartsMCPServers: reload_config applies the new
// mcp_servers: the removed server stops, the changed one reconnects to its
// new address, the added one starts, and the unchanged one keeps its
// session; the next turn's model sees the new tools.
func TestReloadRestartsMCPServers(t *testing.T) {
	t.Parallel()
	type counted struct {
		url string
		// opens counts the requests that open a session (no session id).
		opens atomic.Int32
	}
	serve := func() *counted {
		c := &counted{}
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil)
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
				c.opens.Add(1)
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(s.Close) // after the app stops its client: Close waits for its streams
		c.url = s.URL
		return c
	}
	keep, old, changed, added := serve(), serve(), serve(), serve()
	entries := func(names map[string]*counted) string {
		y := "mcp_servers:\n"
		for _, n := range []string{"keep", "change", "drop", "add"} {
			if c := names[n]; c != nil {
				y += "  " + n + ":\n    type: http\n    url: " + c.url + "\n"
			}
		}
		return y
	}
	srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{project: entries(map[string]*counted{"keep": keep, "change": old, "drop": old})})
	b.Send(user("first"))
	b.Next(typ("result", ""))

	keepOpens, oldOpens := keep.opens.Load(), old.opens.Load()
	if keepOpens == 0 || oldOpens == 0 {
		t.Fatalf("sessions opened before the reload: keep %d, old %d", keepOpens, oldOpens)
	}
	file := filepath.Join(b.ws, ".arbor", "config.yaml")
	if err := os.WriteFile(file, []byte(entries(map[string]*counted{"keep": keep, "change": changed, "add": added})), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Send(`{"type":"control_request","request_id":"r-1","request":{"subtype":"reload_config"}}`)
	if r := b.Next(func(o out) bool { return o.Type == "control_response" && o.Response.RequestID == "r-1" }); r.Response.Subtype != "success" {
		t.Fatalf("reload_config: %s", r.raw)
	}
	b.Send(`{"type":"control_request","request_id":"s-1","request":{"subtype":"mcp_status"}}`)
	st := b.Next(func(o out) bool { return o.Type == "control_response" && o.Response.RequestID == "s-1" })
	var status struct {
		MCPServers []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(st.Response.Response, &status); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range status.MCPServers {
		got = append(got, s.Name+" "+s.Status)
	}
	if len(got) != 3 || got[0] != "add connected" || got[1] != "change connected" || got[2] != "keep connected" {
		t.Fatalf("mcp_status after reload_config: %q; want add, change and keep connected", got)
	}
	if n := keep.opens.Load(); n != keepOpens {
		t.Fatalf("the unchanged server was reconnected (%d session openings, %d before the reload)", n, keepOpens)
	}
	if n := old.opens.Load(); n != oldOpens {
		t.Fatalf("the old address was reconnected (%d session openings, %d before)", n, oldOpens)
	}
	if changed.opens.Load() == 0 || added.opens.Load() == 0 {
		t.Fatalf("session openings: changed %d, added %d; want both connected", changed.opens.Load(), added.opens.Load())
	}

	b.Send(user("second"))
	b.Next(typ("result", ""))
	b.Close()
	var offered []string
	for _, ts := range srv.Requests()[1].Tools {
		offered = append(offered, ts.Name)
	}
	has := func(n string) bool {
		for _, o := range offered {
			if o == n {
				return true
			}
		}
		return false
	}
	if !has("mcp__add__echo") || !has("mcp__keep__echo") || !has("mcp__change__echo") || has("mcp__drop__echo") {
		t.Fatalf("the second turn offered %q; want the tools of add, change and keep, and none of drop", offered)
	}
}
