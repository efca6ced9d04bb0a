package mcpclient

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/config"
)

// TestServerErrorsKeepTheirSecretsOut: a server that fails to start with
// a token in its URL (the HTTP client's error quotes the URL) is shown,
// in its status and in the result of a call to one of its tools, with
// the token replaced by [REDACTED].
func TestServerErrorsKeepTheirSecretsOut(t *testing.T) {
	t.Parallel()
	const token = "FAKE-SEARCH-KEY-0007"
	b := setup(t, map[string]config.MCPServer{
		"search": {URL: "http://127.0.0.1:1/mcp?api_key=${SEARCH_API_KEY}"},
	}, func(o *Options) {
		o.Getenv = func(k string) string {
			if k == "SEARCH_API_KEY" {
				return token
			}
			return ""
		}
	})
	st := b.m.Status()
	if len(st) != 1 || st[0].State != StateFailed || st[0].Error == "" {
		t.Fatalf("status = %+v, want search failed with an error", st)
	}
	if strings.Contains(st[0].Error, token) || !strings.Contains(st[0].Error, "[REDACTED]") {
		t.Fatalf("the error shows the token, or no sign of it: %s", st[0].Error)
	}
	s := b.m.servers[0]
	if got := s.scrub("GET http://127.0.0.1:1/mcp?api_key=" + token + " failed"); strings.Contains(got, token) {
		t.Fatalf("scrub kept the token: %s", got)
	}
}
