package sandbox

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestProxyAllowed: the allow-list decision, and the entries NewProxy
// refuses.
func TestProxyAllowed(t *testing.T) {
	p, err := NewProxy(ProxyOptions{Allow: []string{
		"example.com", "*.wild.test", "Mixed.Case.TEST.", "port.test:8443", "under_score.test",
		"127.0.0.1:8080", "10.0.0.1", "::1", "[2001:db8::1]:443",
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"example.com", 443, true},
		{"example.com", 80, true},
		{"EXAMPLE.Com", 443, true},
		{"example.com.", 443, true},
		{"www.example.com", 443, false},
		{"notexample.com", 443, false},
		{"example.com.evil.test", 443, false},
		{"a.wild.test", 443, true},
		{"a.b.wild.test", 443, true},
		{"A.Wild.TEST.", 443, true},
		{"wild.test", 443, false}, // a wildcard is for subdomains only
		{"xwild.test", 443, false},
		{"mixed.case.test", 22, true},
		{"port.test", 8443, true},
		{"port.test", 443, false},
		{"under_score.test", 80, true},
		{"127.0.0.1", 8080, true},
		{"127.0.0.1", 80, false},
		{"::ffff:127.0.0.1", 8080, true},
		{"10.0.0.1", 22, true},
		{"10.0.0.2", 22, false},
		{"::1", 80, true},
		{"[::1]", 443, true},
		{"0:0:0:0:0:0:0:1", 443, true},
		{"2001:db8::1", 443, true},
		{"[2001:DB8:0::1]", 443, true},
		{"2001:db8::1", 80, false},
		// not a destination
		{"", 443, false},
		{"example.com", 0, false},
		{"example.com", 65536, false},
		{"example.com", -443, false},
		{"exa mple.com", 443, false},
		{"example.com/x", 443, false},
		{"example.com\r\nX-Y: z", 443, false},
		{"example..com", 443, false},
		{"*.wild.test", 443, false},
		{"еxample.com", 443, false}, // a Cyrillic е
		{"127.1", 8080, false},      // read as 127.0.0.1 by some resolvers
		{"0x7f.0.0.1", 8080, false},
		{"fe80::1%eth0", 80, false},
		{"[10.0.0.1]", 22, false},
	} {
		if got := p.Allowed(c.host, c.port); got != c.want {
			t.Errorf("Allowed(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}

	// A name allows the name, not the addresses it resolves to.
	p, err = NewProxy(ProxyOptions{Allow: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Allowed("localhost", 80) || p.Allowed("127.0.0.1", 80) || p.Allowed("::1", 80) {
		t.Error("a name entry must allow the name and not its addresses")
	}

	for _, bad := range []string{
		"", "*", "*.", "*.*.example.com", "example..com", "exa mple.com", "-bad.example", "ex\x00ample.com",
		"http://example.com", "example.com/", "example.com:", "example.com:0", "example.com:65536",
		"example.com:http", "example.com:+80", "[::1", "[example.com]:443", "[127.0.0.1]:80",
		"*.127.0.0.1", "*.[::1]", "127.1", "fe80::1%eth0",
	} {
		_, err := NewProxy(ProxyOptions{Allow: []string{"ok.example", bad}})
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("NewProxy with entry %q: %v, want an error naming it", bad, err)
		}
	}
}

// TestProxyConnectAndForward: a real client reaches allowed loopback
// servers over https (CONNECT) and plain http (absolute-form requests,
// several origins over one keep-alive connection to the proxy), and the
// origins do not see the proxy's fields.
func TestProxyConnectAndForward(t *testing.T) {
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "secure %s", r.URL.Path)
	}))
	defer secure.Close()
	var mu sync.Mutex
	var seen []http.Header
	release := make(chan struct{})
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
			fmt.Fprintf(w, "%s %s?%s %s", r.Method, r.URL.Path, r.URL.RawQuery, body)
		case "/stream": // no length: chunked; the second part only once the first arrived
			io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			io.WriteString(w, "second\n")
		}
	}))
	defer plain.Close()
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // before plain.Close, which waits for the handler
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "other")
	}))
	defer other.Close()

	p, err := NewProxy(ProxyOptions{Allow: []string{proxyAddr(secure), proxyAddr(plain), proxyAddr(other)}})
	if err != nil {
		t.Fatal(err)
	}
	client, dials := proxyClient(t, proxyServe(t, p), secure.Client().Transport.(*http.Transport).TLSClientConfig)

	if got := proxyGet(t, client, "GET", secure.URL+"/hello", nil, nil); got != "secure /hello" {
		t.Errorf("https through CONNECT: %q", got)
	}

	before := dials.Load()
	hdr := http.Header{"X-Test": {"yes"}, "Connection": {"X-Hop"}, "X-Hop": {"1"}}
	if got := proxyGet(t, client, "GET", plain.URL+"/echo?q=1", nil, hdr); got != "GET /echo?q=1 " {
		t.Errorf("GET: %q", got)
	}
	if got := proxyGet(t, client, "POST", plain.URL+"/echo", strings.NewReader("a body"), http.Header{"Expect": {"100-continue"}}); got != "POST /echo? a body" {
		t.Errorf("POST: %q", got)
	}
	chunked := struct{ io.Reader }{strings.NewReader("of no known length")} // sent chunked
	if got := proxyGet(t, client, "PUT", plain.URL+"/echo", chunked, nil); got != "PUT /echo? of no known length" {
		t.Errorf("PUT: %q", got)
	}
	if got := proxyGet(t, client, "GET", other.URL, nil, nil); got != "other" {
		t.Errorf("another origin: %q", got)
	}
	if got := proxyGet(t, client, "HEAD", plain.URL+"/echo", nil, nil); got != "" {
		t.Errorf("HEAD: %q", got)
	}
	resp, err := client.Get(plain.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	releaseOnce()
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if first != "first\n" || string(rest) != "second\n" || err != nil {
		t.Errorf("a streamed response: %q %q, %v", first, rest, err)
	}
	if n := dials.Load() - before; n != 1 {
		t.Errorf("the plain requests took %d connections to the proxy, want 1 (kept alive)", n)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, h := range seen {
		for _, k := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Hop", "Expect"} {
			if v := h.Get(k); v != "" {
				t.Errorf("the origin saw %s: %s", k, v)
			}
		}
	}
	if len(seen) != 4 || seen[0].Get("X-Test") != "yes" {
		t.Errorf("the origin saw %v", seen)
	}
}

// TestProxyRefused: a destination off the list gets a 403 naming it, is
// told to Blocked, and is never dialed (names are not even resolved);
// requests that name no valid destination get a 400, an oversized
// header a 431.
func TestProxyRefused(t *testing.T) {
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer allowed.Close()
	var reached atomic.Int32
	refused := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	refused.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			reached.Add(1)
		}
	}
	refused.Start()
	defer refused.Close()

	blocked := make(chan string, 10)
	var dials atomic.Int32
	p, err := NewProxy(ProxyOptions{
		Allow:   []string{proxyAddr(allowed)},
		Blocked: func(host string, port int) { blocked <- net.JoinHostPort(host, strconv.Itoa(port)) },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	socket := proxyServe(t, p)
	_, allowedPort, _ := net.SplitHostPort(proxyAddr(allowed))

	for _, c := range []struct{ target, named string }{
		{proxyAddr(refused), proxyAddr(refused)},
		{"localhost:" + allowedPort, "localhost:" + allowedPort}, // the name of an allowed address
		{"EVIL.Example.:443", "evil.example:443"},
		{"[::1]:443", "[::1]:443"},
	} {
		resp, body := proxyRaw(t, socket, "CONNECT "+c.target+" HTTP/1.1\r\nHost: "+c.target+"\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Arbor-Sandbox") != "blocked" ||
			!strings.Contains(body, "network access to "+c.named+" is not allowed") {
			t.Errorf("CONNECT %s: %s %v %q", c.target, resp.Status, resp.Header, body)
		}
		proxyBlocked(t, blocked, c.named)
	}

	client, _ := proxyClient(t, socket, nil)
	resp, err := client.Get(refused.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), proxyAddr(refused)+" is not allowed") {
		t.Errorf("GET %s: %s %q", refused.URL, resp.Status, body)
	}
	proxyBlocked(t, blocked, proxyAddr(refused))
	if got := proxyGet(t, client, "GET", allowed.URL, nil, nil); got != "ok" {
		t.Errorf("the allowed server: %q", got)
	}

	big := strings.Repeat("a", proxyMaxHeader+1000)
	for req, code := range map[string]int{
		"GET /x HTTP/1.1\r\nHost: " + proxyAddr(allowed) + "\r\n\r\n":                   http.StatusBadRequest, // not a proxy request
		"GET ftp://" + proxyAddr(allowed) + "/ HTTP/1.1\r\nHost: x\r\n\r\n":             http.StatusBadRequest,
		"CONNECT " + proxyAddr(allowed) + "/x HTTP/1.1\r\nHost: x\r\n\r\n":              http.StatusBadRequest,
		"CONNECT example.com HTTP/1.1\r\nHost: x\r\n\r\n":                               http.StatusBadRequest, // no port
		"CONNECT bad_host..example:443 HTTP/1.1\r\nHost: x\r\n\r\n":                     http.StatusBadRequest,
		"CONNECT 127.0.0.1:0 HTTP/1.1\r\nHost: x\r\n\r\n":                               http.StatusBadRequest,
		"GET http://" + proxyAddr(allowed) + "/ HTTP/1.1\r\nX-Big: " + big + "\r\n\r\n": http.StatusRequestHeaderFieldsTooLarge,
	} {
		if resp, body := proxyRaw(t, socket, req); resp.StatusCode != code {
			t.Errorf("%.60q: %s %q, want %d", req, resp.Status, body, code)
		}
	}

	select {
	case got := <-blocked:
		t.Errorf("Blocked was told %s, by a bad request", got)
	default:
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("the proxy dialed %d times, want 1 (the allowed server)", n)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the refused server had %d connections", n)
	}
}

// TestProxyTunnelHalfClose: each direction of a tunnel ends on its own,
// and bytes sent right after the CONNECT, before its answer, go through.
func TestProxyTunnelHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // reads to the end, then answers
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		fmt.Fprintf(c, "got %q", b)
	}()
	p, err := NewProxy(ProxyOptions{Allow: []string{ln.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	c := proxyDial(t, proxyServe(t, p))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\nearly", ln.Addr())
	fmt.Fprintf(c, " and late")
	c.(*net.UnixConn).CloseWrite()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	rest, err := io.ReadAll(br)
	if string(rest) != `got "early and late"` || err != nil {
		t.Errorf("through the tunnel: %q, %v", rest, err)
	}
}

// TestProxyClose: Close ends open tunnels and idle client connections,
// Serve then returns nil, and a second Close is fine; a closed proxy
// serves nothing more.
func TestProxyClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	originEnded := make(chan struct{})
	go func() { // echoes until its client goes
		defer close(originEnded)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c})
	}()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer origin.Close()
	p, err := NewProxy(ProxyOptions{Allow: []string{ln.Addr().String(), proxyAddr(origin)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, err := p.ListenUnix(filepath.Join(dir, "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()

	tunnel := proxyDial(t, filepath.Join(dir, "proxy.sock"))
	fmt.Fprintf(tunnel, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\nping\n", ln.Addr())
	br := bufio.NewReader(tunnel)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	if line, err := br.ReadString('\n'); line != "ping\n" || err != nil {
		t.Fatalf("through the tunnel: %q, %v", line, err)
	}
	idle := proxyDial(t, filepath.Join(dir, "proxy.sock")) // kept alive after a request
	fmt.Fprintf(idle, "GET %s/ HTTP/1.1\r\nHost: %s\r\n\r\n", origin.URL, proxyAddr(origin))
	ibr := bufio.NewReader(idle)
	resp, err = http.ReadResponse(ibr, nil)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET: %v %v", resp, err)
	}
	io.ReadAll(resp.Body)

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close did not return")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("the tunnel is still open after Close")
	}
	if _, err := ibr.ReadByte(); err == nil {
		t.Error("an idle client connection is still open after Close")
	}
	<-originEnded // the tunnel's far end closed too
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}

	l2, err := net.Listen("unix", filepath.Join(dir, "late.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(l2); err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
	if _, err := l2.Accept(); err == nil {
		t.Error("Serve after Close left its listener open")
	}
	if _, err := p.ListenUnix(filepath.Join(dir, "later.sock")); err == nil {
		t.Error("ListenUnix after Close succeeded")
	}
}

// proxyServe serves p on a unix socket in a temporary directory and
// returns its path; the test's end closes p and checks that Serve
// returned nil.
func proxyServe(t *testing.T, p *Proxy) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := p.ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return path
}

// proxyClient is an HTTP client whose proxy (with credentials, which no
// origin may see) is reached on socket; dials counts its connections to it.
func proxyClient(t *testing.T, socket string, tc *tls.Config) (client *http.Client, dials *atomic.Int32) {
	dials = new(atomic.Int32)
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("user", "secret"), Host: "proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
		TLSClientConfig:       tc,
		ExpectContinueTimeout: time.Minute, // the proxy must answer 100 itself
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: time.Minute}, dials
}

// proxyGet makes a request through client and returns the body of its
// 200 response.
func proxyGet(t *testing.T, client *http.Client, method, u string, body io.Reader, h http.Header) string {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %q, %v", method, u, resp.Status, b, err)
	}
	return string(b)
}

// proxyRaw sends request as it is on a new connection to socket and
// returns the answer and its body.
func proxyRaw(t *testing.T, socket, request string) (*http.Response, string) {
	t.Helper()
	c := proxyDial(t, socket)
	io.WriteString(c, request) // may fail half-way when the proxy refuses a long head
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.60q: %v", request, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// proxyBlocked checks that Blocked was told of want before the client
// had its answer.
func proxyBlocked(t *testing.T, blocked <-chan string, want string) {
	t.Helper()
	select {
	case got := <-blocked:
		if got != want {
			t.Errorf("Blocked was told %s, want %s", got, want)
		}
	default:
		t.Errorf("Blocked was not told of %s before the answer", want)
	}
}

// proxyDial connects to the proxy's socket; a test that goes wrong fails
// at the deadline instead of hanging.
func proxyDial(t *testing.T, socket string) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	t.Cleanup(func() { c.Close() })
	return c
}

// proxyAddr is the host:port of s.
func proxyAddr(s *httptest.Server) string { return s.Listener.Addr().String() }
