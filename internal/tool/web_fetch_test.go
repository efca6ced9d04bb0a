package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// webServer serves the pages web_fetch's tests fetch.
func webServer(t *testing.T) *httptest.Server {
	t.Helper()
	page, err := os.ReadFile("testdata/webpage.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/docs/cache", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/docs/cache", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := strings.Repeat("x", 1023) + "\n"
		for range 11 << 10 { // 11 MiB
			fmt.Fprint(w, line)
		}
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		// ISO-8859-1 bytes, the charset declared in the page only.
		w.Write([]byte("<html><head><meta charset=\"iso-8859-1\"><title>Caf\xe9</title></head><body><article><h1>Le caf\xe9</h1><p>Un caf\xe9 cr\xe8me co\xfbte deux euros, et le th\xe9 aussi. " +
			strings.Repeat("On y parle de tout et de rien, longtemps. ", 8) + "</p></article></body></html>"))
	})
	mux.HandleFunc("/api.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	})
	mux.HandleFunc("/logo.png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// fetcher is web_fetch with policy deciding, guarded by it as in a session.
func fetcher(t *testing.T, mode permission.Mode, sb *sandbox.Sandbox, rules ...string) Tool {
	t.Helper()
	e, err := permission.New(permission.Options{Mode: mode, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range rules {
		r, err := permission.ParseRule(spec, permission.Allow, permission.ScopeSession)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	return Guard(newWebFetch(BuiltinOptions{Policy: e, Sandbox: sb}), e, nil)
}

func fetch(t *testing.T, tl Tool, args string) Result {
	t.Helper()
	return tl.Run(context.Background(), Call{ID: "c1", Input: json.RawMessage(args)})
}

func TestWebFetch(t *testing.T) {
	t.Parallel()
	srv := webServer(t)
	tl := fetcher(t, permission.ModeDefault, nil, "web_fetch(domain:127.0.0.1)")

	t.Run("PageAsMarkdown", func(t *testing.T) {
		t.Parallel()
		r := fetch(t, tl, `{"url":"`+srv.URL+`/docs/cache#invalidation"}`)
		got := reqOK(t, r)
		reqContains(t, got, "Title: Configuring the widget cache", "## Settings",
			"| Setting      | Default | Meaning", `| max\_entries | 10000   | Widgets kept before the oldest is dropped`,
			"[the invalidate endpoint]("+srv.URL+"/docs/api#invalidate)", "curl -X POST")
		for _, noise := range []string{"dataLayer", "tracker.example", "font-family", "Accept all"} {
			if strings.Contains(got, noise) {
				t.Errorf("the page's %q reached the model:\n%s", noise, got)
			}
		}
	})
	t.Run("Raw", func(t *testing.T) {
		t.Parallel()
		reqContains(t, reqOK(t, fetch(t, tl, `{"url":"`+srv.URL+`/docs/cache","raw":true}`)), "<table>", "dataLayer")
	})
	t.Run("Redirect", func(t *testing.T) {
		t.Parallel()
		reqContains(t, reqOK(t, fetch(t, tl, `{"url":"`+srv.URL+`/moved"}`)), "(redirected from "+srv.URL+"/moved)", "## Invalidation")
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"`+srv.URL+`/loop"}`)), "more than 10 redirects")
	})
	t.Run("RedirectToAnotherHostIsDecided", func(t *testing.T) {
		t.Parallel()
		away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/docs/cache", http.StatusFound)
		}))
		defer away.Close()
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"`+away.URL+`"}`)), "localhost", "rule such as web_fetch(domain:localhost)")
		both := fetcher(t, permission.ModeDefault, nil, "web_fetch(domain:127.0.0.1)", "web_fetch(domain:localhost)")
		reqContains(t, reqOK(t, fetch(t, both, `{"url":"`+away.URL+`"}`)), "## Settings")
	})
	t.Run("TenMegabyteBody", func(t *testing.T) {
		t.Parallel()
		got := reqOK(t, fetch(t, tl, `{"url":"`+srv.URL+`/big"}`))
		reqContains(t, got, "(the response was larger than 10 MiB; the rest was not read)", "[cut: the page goes on for")
		if len(got) > webFetchMaxOutput+1000 {
			t.Fatalf("%d characters reached the model", len(got))
		}
	})
	t.Run("NotUTF8", func(t *testing.T) {
		t.Parallel()
		reqContains(t, reqOK(t, fetch(t, tl, `{"url":"`+srv.URL+`/latin1"}`)), "Le café", "café crème coûte deux euros")
	})
	t.Run("JSONImageAndErrors", func(t *testing.T) {
		t.Parallel()
		reqContains(t, reqOK(t, fetch(t, tl, `{"url":"`+srv.URL+`/api.json"}`)), `{"ok":true}`)
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"`+srv.URL+`/logo.png"}`)), "is image/png, not text")
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"`+srv.URL+`/nope"}`)), "answered 404 Not Found")
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"`+srv.URL+`/slow","timeout":1}`)), "did not answer within 1s")
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"file:///etc/passwd"}`)), "only http:// and https://")
		reqContains(t, reqErr(t, fetch(t, tl, `{"url":"http://user:pw@127.0.0.1/"}`)), "credentials")
	})
	t.Run("PrivateAddressesNeedARule", func(t *testing.T) {
		t.Parallel()
		trust := fetcher(t, permission.ModeTrust, nil)
		reqContains(t, reqErr(t, fetch(t, trust, `{"url":"`+srv.URL+`/docs/cache"}`)), "loopback, private or link-local", "web_fetch(domain:127.0.0.1)")
		reqContains(t, reqErr(t, fetch(t, trust, `{"url":"http://localhost:1/"}`)), "web_fetch(domain:localhost)")
		reqContains(t, reqErr(t, fetch(t, trust, `{"url":"http://169.254.169.254/latest/meta-data/"}`)), "web_fetch(domain:169.254.169.254)")
	})
	t.Run("DefaultModeAsksForAHost", func(t *testing.T) {
		t.Parallel()
		res := fetch(t, fetcher(t, permission.ModeDefault, nil), `{"url":"https://example.com/"}`)
		reqContains(t, reqErr(t, res), "approval")
	})
}

// TestWebFetchUnderTheSandbox: with the sandbox on, web_fetch reaches only
// the allow-list's hosts, without asking; another host is blocked and
// named, as for commands.
func TestWebFetchUnderTheSandbox(t *testing.T) {
	t.Parallel()
	if _, err := sandbox.Detect(); err != nil {
		t.Fatalf("%v (bash scripts/test.sh installs bubblewrap)", err)
	}
	srv := webServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	sb, err := sandbox.New(sandbox.Policy{Workspace: t.TempDir(), Allow: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	tl := fetcher(t, permission.ModeDefault, sb, "web_fetch(domain:127.0.0.1)")
	reqContains(t, reqOK(t, fetch(t, tl, `{"url":"`+srv.URL+`/docs/cache"}`)), "## Settings")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "reached") }))
	defer other.Close()
	r := fetch(t, tl, `{"url":"`+other.URL+`/"}`)
	reqContains(t, reqErr(t, r), "network access to "+strings.TrimPrefix(other.URL, "http://")+" was blocked")
	if len(r.Blocked) != 1 {
		t.Fatalf("blocked %v", r.Blocked)
	}
}
