package web_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/tree/treetest"
	"github.com/arbor-run/arbor/internal/web"
)

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8340", "", true},
		{"localhost:8340", "", true},
		{"[::1]:0", "", true},
		{"0.0.0.0:8340", "", false},
		{":8340", "", false},
		{"192.168.1.5:8340", "", false},
		{"example.com:80", "", false},
		{"0.0.0.0:8340", "s3cret", true},
	} {
		err := web.CheckAddr(tc.addr, tc.token)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, web.ErrNeedToken) {
			t.Errorf("CheckAddr(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}
	if err := web.CheckAddr("no-port", ""); err == nil {
		t.Error("an address without a port is accepted")
	}
	// A bare port (it said "address 8340: missing port in address").
	if err := web.CheckAddr("8340", ""); err == nil || !strings.Contains(err.Error(), "write 127.0.0.1:8340 (this machine only) or :8340") {
		t.Errorf("CheckAddr(\"8340\") = %v, want the addresses to write instead", err)
	}
}

// TestTokenRequired: with a token, every page and API call without it is
// refused with 401; the header, the cookie and ?token= (which sets the
// cookie) are accepted.
func TestTokenRequired(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, setupOpts{token: "s3cret-token"})
	for _, path := range []string{"/", "/api/runs", "/api/runs/-/events", "/runs/x", "/static/app.js"} {
		res, err := http.Get(b.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d", path, res.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", b.http.URL+"/api/runs", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v %v", res.StatusCode, err)
	}
	post, _ := http.NewRequest("POST", b.http.URL+"/api/runs", strings.NewReader(`{"goal":"x"}`))
	post.Header.Set("Content-Type", "application/json")
	if res, err := http.DefaultClient.Do(post); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST without token: %v %v", res.StatusCode, err)
	}
	if code, _ := b.get("/api/runs"); code != http.StatusOK {
		t.Fatalf("bearer token: %d", code)
	}
	res, err := http.Get(b.http.URL + "/?token=s3cret-token")
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("?token=: %v %v", res.StatusCode, err)
	}
	res.Body.Close()
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "arbor_token" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly {
		t.Fatalf("no HttpOnly token cookie: %v", res.Cookies())
	}
	req, _ = http.NewRequest("GET", b.http.URL+"/api/runs", nil)
	req.AddCookie(cookie)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("cookie: %v %v", res.StatusCode, err)
	}
}

// TestCrossSiteRefused: a POST that is not JSON, or comes from another
// origin, is refused even without a token.
func TestCrossSiteRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	form, _ := http.NewRequest("POST", b.http.URL+"/api/runs", strings.NewReader("goal=x"))
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if res, err := http.DefaultClient.Do(form); err != nil || res.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("form post: %v %v", res.StatusCode, err)
	}
	other, _ := http.NewRequest("POST", b.http.URL+"/api/runs", strings.NewReader(`{"goal":"x"}`))
	other.Header.Set("Content-Type", "application/json")
	other.Header.Set("Origin", "http://evil.example")
	if res, err := http.DefaultClient.Do(other); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin post: %v %v", res.StatusCode, err)
	}
	rebind, _ := http.NewRequest("GET", b.http.URL+"/api/runs", nil)
	rebind.Host = "evil.example"
	if res, err := http.DefaultClient.Do(rebind); err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("non-loopback Host without a token: %v %v", res.StatusCode, err)
	}
}

// TestModelOutputEscaped: a node result, a goal and a transcript holding
// markup render as text on every page.
func TestModelOutputEscaped(t *testing.T) {
	t.Parallel()
	evil := `<script>alert("pwned")</script><img src=x onerror=alert(1)>`
	b := setup(t, treetest.Script{
		1: {
			calls(call("spawn", map[string]any{"goal": "child " + evil, "prompt": "p"})),
			complete("draft"),
			complete("root says " + evil),
		},
		2: {complete("child says " + evil)},
	})
	var started web.Started
	b.mustDo("POST", "/api/runs", web.NewRun{Goal: "goal " + evil}, &started)
	s := b.stream(started.ID)
	b.waitRunEnded(s, started.ID)
	for _, path := range []string{"/", "/runs/" + started.ID, "/runs/" + started.ID + "/graph", "/runs/" + started.ID + "/nodes/1", "/runs/" + started.ID + "/nodes/2"} {
		code, html := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", path, code)
		}
		if strings.Contains(html, "<script>alert") || strings.Contains(html, "<img src=x") {
			t.Fatalf("GET %s renders markup from the model:\n%s", path, html)
		}
		if !strings.Contains(html, "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;") {
			t.Fatalf("GET %s does not show the text escaped:\n%s", path, html)
		}
	}
	// The SSE frames carry it as JSON with markup escaped too.
	code, js := b.get("/api/runs/" + started.ID)
	if code != 200 || strings.Contains(js, "<script>") {
		t.Fatalf("API: %d %s", code, js)
	}
}
