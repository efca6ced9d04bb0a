package sandbox

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Proxy is the network allow-list of sandboxed processes: an HTTP proxy on
// a unix socket. A confined command runs in a network namespace of its own
// with no route out; the socket is bound into it, the helper forwards
// 127.0.0.1:<port> to it, and HTTP_PROXY and its kin point there. So every
// connection the command makes goes through here, and only to what Allow
// lists: CONNECT tunnels (https, and whatever else a client tunnels) and
// plain http requests in absolute form.
//
// A destination is judged by the name the client gave, before any DNS
// lookup, and the proxy resolves allowed names itself (through Dial): a
// command cannot reach a host by naming it differently, and an allowed
// name does not allow its address. Refusals are told to Blocked before
// the client hears of them, so whoever reads the command's output
// afterwards finds them recorded.
//
// Invariants: every goroutine the proxy starts (one per client
// connection, one more per open tunnel) is counted in wg, started only
// while the proxy is open, and waited for by Close, which first closes
// every listener and connection the proxy holds so that none of them
// stays blocked. mu guards only closed and open, and is never held across
// I/O, a dial or a callback.
type Proxy struct {
	allow   []allowEntry
	blocked func(host string, port int)
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)

	ctx    context.Context // cancelled by Close: ends dials in flight and Serve's pauses
	cancel context.CancelFunc
	wg     sync.WaitGroup // the proxy's goroutines; added to only under mu while !closed, so never during Close's Wait

	mu     sync.Mutex
	closed bool
	open   map[io.Closer]struct{} // the listeners and connections Close closes
}

// ProxyOptions configure a Proxy.
type ProxyOptions struct {
	// Allow lists what may be reached: a host name ("example.com"), a
	// wildcard for its subdomains at any depth ("*.example.com", which does
	// not match example.com itself), an IP literal ("127.0.0.1", "::1"),
	// each optionally with ":port" (no port: any port; an IPv6 literal
	// with a port is bracketed, "[::1]:443"). Matching is case-insensitive
	// and ignores a trailing dot.
	Allow []string
	// Blocked is told of every refused destination (host, port), on the
	// proxy's goroutine, before the client is answered; may be nil. It
	// must not call Close (Close waits for it).
	Blocked func(host string, port int)
	// Dial dials allowed destinations; nil = net.Dialer with a 10 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// proxyMaxHeader bounds the head (first line and fields) of every request
// and response read: no client or server makes the proxy buffer without end.
const proxyMaxHeader = 64 << 10

// NewProxy returns a proxy for o; its error names the first invalid Allow entry.
func NewProxy(o ProxyOptions) (*Proxy, error) {
	p := &Proxy{blocked: o.Blocked, dial: o.Dial, open: map[io.Closer]struct{}{}}
	for _, s := range o.Allow {
		e, err := parseAllowEntry(s)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, e)
	}
	if p.dial == nil {
		p.dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// ListenUnix listens on a new unix socket at path, for its owner only (the
// sandboxed process runs as the same user; path's directory should be
// private too: the mode is set just after the socket is made). Close
// closes the listener, removing the socket, even if it was never served.
func (p *Proxy) ListenUnix(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	if !p.add(l, nil) {
		return nil, errors.New("sandbox: the proxy is closed")
	}
	return l, nil
}

// Serve answers the connections of l until Close, then returns nil; it
// returns Accept's error if l fails otherwise. A failed Accept that may
// pass (too many open files) is retried after a pause, as net/http does.
func (p *Proxy) Serve(l net.Listener) error {
	if !p.add(l, nil) {
		return nil
	}
	for {
		c, err := l.Accept()
		var t interface{ Temporary() bool }
		switch {
		case err == nil:
			p.add(c, func() { p.serveConn(c) })
		case p.ctx.Err() != nil:
			return nil
		case errors.As(err, &t) && t.Temporary():
			select {
			case <-p.ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		default:
			return err
		}
	}
}

// Close stops accepting, closes every connection (tunnels and requests in
// flight end) and waits for every goroutine the proxy started. A second
// call waits the same and returns nil.
func (p *Proxy) Close() error {
	p.cancel() // before the listeners close: Serve then knows why
	p.mu.Lock()
	p.closed = true
	open := p.open
	p.open = nil
	p.mu.Unlock()
	for c := range open {
		c.Close()
	}
	p.wg.Wait()
	return nil
}

// Allowed reports whether the allow-list lets a client reach host (a name,
// or an IP literal, bracketed or not) on port. An invalid host or a port
// outside 1..65535 is never allowed.
func (p *Proxy) Allowed(host string, port int) bool {
	name, ip, ok := canonHost(host)
	if !ok || port < 1 || port > 65535 {
		return false
	}
	for _, e := range p.allow {
		if (e.port == 0 || e.port == port) && (ip.IsValid() && e.ip == ip ||
			name != "" && (e.name == name || strings.HasPrefix(e.name, ".") && strings.HasSuffix(name, e.name))) {
			return true
		}
	}
	return false
}

// add hands c (a listener or connection) to Close, and starts fn (unless
// nil) on a goroutine Close waits for. Once closed it closes c instead
// and returns false; fn does not run.
func (p *Proxy) add(c io.Closer, fn func()) bool {
	p.mu.Lock()
	ok := !p.closed
	if ok {
		p.open[c] = struct{}{}
		if fn != nil {
			p.wg.Go(fn)
		}
	}
	p.mu.Unlock()
	if !ok {
		c.Close()
	}
	return ok
}

// drop closes c and forgets it.
func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	c.Close()
}

// serveConn answers the requests of one client connection in turn: a
// CONNECT turns it into a tunnel for good; a forwarded request may be
// followed by another, to any host (each is judged on its own).
func (p *Proxy) serveConn(c net.Conn) {
	defer p.drop(c)
	lr := &io.LimitedReader{R: c}
	br := bufio.NewReader(lr)
	for {
		lr.N = proxyMaxHeader
		req, err := http.ReadRequest(br)
		if err != nil {
			switch {
			case lr.N <= 0:
				proxyReply(c, http.StatusRequestHeaderFieldsTooLarge, false, "arbor sandbox: request header too large")
			case !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed):
				proxyReply(c, http.StatusBadRequest, false, "arbor sandbox: malformed request: "+err.Error())
			}
			return
		}
		lr.N = math.MaxInt64
		if req.Method == http.MethodConnect {
			p.connect(c, br, req)
			return
		}
		if !p.forward(c, req) {
			return
		}
	}
}

// connect serves a CONNECT request: an allowed destination is dialed and
// the connection becomes a tunnel to it until both directions end.
func (p *Proxy) connect(c net.Conn, br *bufio.Reader, req *http.Request) {
	host, portStr, err := net.SplitHostPort(req.URL.Host)
	if err != nil || req.URL.Path != "" {
		proxyReply(c, http.StatusBadRequest, false, "arbor sandbox: CONNECT needs host:port")
		return
	}
	up := p.reach(c, host, portStr)
	if up == nil {
		return
	}
	defer p.drop(up)
	_, _ = io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n") // if it fails, so does the copy to c
	// Each direction ends on its own: at the end of its input the writer
	// is half-closed and the other direction goes on; on an error both
	// connections close, ending the other too. (br has first what the
	// client sent without waiting for the 200.)
	upDone := make(chan struct{})
	if !p.add(up, func() {
		defer close(upDone)
		if _, err := io.Copy(up, br); err != nil {
			c.Close()
			up.Close()
		} else {
			halfClose(up) // without it, up goes on until it ends
		}
	}) {
		return
	}
	if _, err := io.Copy(c, up); err != nil || !halfClose(c) {
		c.Close()
		up.Close()
	}
	<-upDone
}

// forward serves a request in absolute form: an allowed destination is
// dialed, sent the request without hop-by-hop fields and answered back
// as it streams. It reports whether the client connection may carry
// another request. Each request has an upstream connection of its own,
// closed after the response: the proxy keeps nothing between requests.
func (p *Proxy) forward(c net.Conn, req *http.Request) (keep bool) {
	u := req.URL
	if !u.IsAbs() || u.Host == "" || u.Scheme != "http" {
		proxyReply(c, http.StatusBadRequest, false, "arbor sandbox: this is a proxy: a request must name its destination (http://host/path, or CONNECT host:port for anything else)")
		return false
	}
	up := p.reach(c, u.Hostname(), cmp.Or(u.Port(), "80"))
	if up == nil {
		return false
	}
	defer p.drop(up)

	keep = !req.Close && req.ProtoAtLeast(1, 1)
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") && req.ContentLength != 0 && req.ProtoAtLeast(1, 1) {
		// The client waits for a 100 before its body, which goes
		// upstream as it arrives: the proxy answers it itself.
		req.Header.Del("Expect")
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	stripHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Write adds none
	}
	req.Close = true
	if err := req.Write(up); err != nil {
		proxyReply(c, http.StatusBadGateway, false, "arbor sandbox: sending the request to "+u.Host+": "+err.Error())
		return false
	}

	// Interim responses (1xx) are not passed on: the one a client waits
	// for, 100 Continue, came from the proxy, and no upgrade was asked for.
	lr := &io.LimitedReader{R: up, N: proxyMaxHeader}
	ubr := bufio.NewReader(lr)
	resp, err := http.ReadResponse(ubr, req)
	for err == nil && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(ubr, req)
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		err = errors.New("unasked protocol switch")
	}
	if err != nil {
		proxyReply(c, http.StatusBadGateway, false, "arbor sandbox: reading the response of "+u.Host+": "+err.Error())
		return false
	}
	lr.N = math.MaxInt64
	stripHop(resp.Header)
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	resp.Close = !keep
	if resp.ContentLength < 0 { // chunked for HTTP/1.1, else until the connection ends
		resp.TransferEncoding = nil
		if keep {
			resp.TransferEncoding = []string{"chunked"}
		}
	}
	// What the client is sent is flushed before each read from the origin,
	// which may wait: a streamed response streams.
	bw := bufio.NewWriter(c)
	resp.Body = flushingBody{resp.Body, bw}
	err = resp.Write(struct{ io.Writer }{bw}) // no ReadFrom, which a flush in Read would upset
	resp.Body.Close()
	return err == nil && bw.Flush() == nil && keep
}

// flushingBody is a response body that flushes w before each read.
type flushingBody struct {
	io.ReadCloser
	w *bufio.Writer
}

func (b flushingBody) Read(p []byte) (int, error) {
	if err := b.w.Flush(); err != nil {
		return 0, err
	}
	return b.ReadCloser.Read(p)
}

// reach judges host:port (as the client gave them) and dials it if it is
// allowed; otherwise, or when the dial fails, it answers the client and
// returns nil. The connection returned is tracked; the caller drops it.
func (p *Proxy) reach(c net.Conn, host, portStr string) net.Conn {
	name, ip, ok := canonHost(host)
	port, portOK := parsePort(portStr)
	if !ok || !portOK {
		proxyReply(c, http.StatusBadRequest, false, fmt.Sprintf("arbor sandbox: invalid destination %q", net.JoinHostPort(host, portStr)))
		return nil
	}
	if ip.IsValid() {
		name = ip.String()
	}
	dest := net.JoinHostPort(name, portStr)
	if !p.Allowed(host, port) {
		if p.blocked != nil {
			p.blocked(name, port)
		}
		proxyReply(c, http.StatusForbidden, true, "arbor sandbox: network access to "+dest+" is not allowed (add it to sandbox.network.allow)")
		return nil
	}
	up, err := p.dial(p.ctx, "tcp", net.JoinHostPort(strings.Trim(host, "[]"), portStr))
	if err != nil {
		proxyReply(c, http.StatusBadGateway, false, "arbor sandbox: cannot reach "+dest+": "+err.Error())
		return nil
	}
	if !p.add(up, nil) {
		return nil
	}
	return up
}

// proxyReply answers the client with an error of the proxy's own, after
// which the connection closes; blocked marks a refusal of the allow-list.
func proxyReply(w io.Writer, code int, blocked bool, msg string) {
	mark := ""
	if blocked {
		mark = "X-Arbor-Sandbox: blocked\r\n"
	}
	_, _ = fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), mark, len(msg)+1, msg)
}

// stripHop removes from h the fields that concern one connection only
// (RFC 9110 7.6.1), which a proxy must not pass on: the usual ones, those
// that Connection names, and Proxy-*.
func stripHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, f := range []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h.Del(f)
	}
	for k := range h {
		if strings.HasPrefix(k, "Proxy-") {
			delete(h, k)
		}
	}
}

// halfClose ends c's writing side, if c can; it reports whether it did.
func halfClose(c net.Conn) bool {
	cw, ok := c.(interface{ CloseWrite() error })
	return ok && cw.CloseWrite() == nil
}

// allowEntry is one entry of the allow-list, as Allowed compares it.
type allowEntry struct {
	name string     // lower case, no trailing dot; ".example.com" for *.example.com; "" for an IP
	ip   netip.Addr // an IP entry's address (IPv4-mapped IPv6 unmapped)
	port int        // 0: any
}

// parseAllowEntry reads an entry of ProxyOptions.Allow.
func parseAllowEntry(s string) (e allowEntry, err error) {
	host, port, splitErr := net.SplitHostPort(s)
	switch {
	case splitErr != nil:
		host = s // no port (or a bare IPv6 address)
	case strings.HasPrefix(s, "["):
		host = "[" + host + "]" // canonHost admits only an IPv6 address in brackets
	}
	ok := true
	if splitErr == nil {
		if e.port, ok = parsePort(port); !ok {
			return e, fmt.Errorf("sandbox: network allow entry %q: the port must be a number from 1 to 65535", s)
		}
	}
	wild := strings.HasPrefix(host, "*.")
	e.name, e.ip, ok = canonHost(strings.TrimPrefix(host, "*."))
	if !ok || wild && e.ip.IsValid() {
		return e, fmt.Errorf("sandbox: network allow entry %q: not a host name, *. and a host name, or an IP address", s)
	}
	if wild {
		e.name = "." + e.name
	}
	return e, nil
}

// canonHost reads host as the allow-list compares it: an IP literal
// (bracketed or not, without a zone; IPv4-mapped IPv6 unmapped), or a host
// name, returned in lower case without its trailing dot. ok is false for
// anything else: characters a host name may not have, empty labels, and
// names ending in a numeric label, which some resolvers would read as an
// IPv4 address ("127.1", "0x7f.1") behind the allow-list's back.
func canonHost(host string) (name string, ip netip.Addr, ok bool) {
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		return "", a.Unmap(), err == nil && a.Is6() && a.Zone() == ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return "", a.Unmap(), a.Zone() == ""
	}
	name = strings.TrimSuffix(host, ".")
	if name == "" || len(name) > 253 {
		return "", ip, false
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || strings.Trim(l, nameChars) != "" {
			return "", ip, false
		}
	}
	name, last := strings.ToLower(name), strings.ToLower(labels[len(labels)-1])
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == "" {
		return "", ip, false
	}
	return name, ip, true
}

// nameChars are the characters of a host name's labels (the underscore
// too, which some names in use have).
const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"

// parsePort reads a decimal port, 1 to 65535.
func parsePort(s string) (int, bool) {
	if len(s) == 0 || len(s) > 5 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, n >= 1 && n <= 65535
}
