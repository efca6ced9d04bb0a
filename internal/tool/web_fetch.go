package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Caps of web_fetch.
const (
	webFetchDefaultTimeout = 30 * time.Second
	webFetchMaxTimeout     = 120 * time.Second
	// webFetchMaxBody is how much of a response is read; the rest is cut.
	webFetchMaxBody = 10 << 20
	// webFetchMaxOutput is how much text reaches the model.
	webFetchMaxOutput    = 100_000
	webFetchMaxRedirects = 10
)

type webFetchArgs struct {
	URL     string `json:"url" jsonschema_description:"The http:// or https:// URL to fetch."`
	Raw     bool   `json:"raw,omitempty" jsonschema_description:"Return the body as it came instead of an HTML page as Markdown."`
	Timeout int    `json:"timeout,omitempty" jsonschema:"minimum=0" jsonschema_description:"Seconds to wait for the whole response; default 30, at most 120."`
	Prompt  string `json:"prompt,omitempty" jsonschema_description:"What you are looking for in the page (Claude Code's WebFetch); the page is returned for you to read."`
}

const webFetchDescription = `Fetch a web page or other text resource by URL. HTML comes back as Markdown of the page's main content ` +
	`(raw: true for the body as it came). Redirects are followed when the permission rules allow the new host. ` +
	`Loopback and private addresses are reached only when a rule names them.`

// webFetch is the web_fetch tool: the typed adapter for the arguments,
// and a Target that resolves the host, so that the permission decision
// knows whether it is private or on the sandbox's allow-list.
type webFetch struct {
	Tool
	sb     *sandbox.Sandbox
	policy Policy // decides redirects and private addresses; nil refuses both
}

func (w *webFetch) Name() string { return Name(w.Tool) }

func newWebFetch(o BuiltinOptions) Tool {
	w := &webFetch{sb: o.Sandbox, policy: o.Policy}
	w.Tool = New("web_fetch", webFetchDescription, KindNetwork, func(ctx context.Context, _ Call, a webFetchArgs) Result {
		return w.fetch(ctx, a)
	})
	return w
}

func (w *webFetch) Target(input json.RawMessage) (Target, error) {
	if _, err := w.Tool.Target(input); err != nil {
		return Target{}, err
	}
	var a webFetchArgs
	_ = json.Unmarshal(input, &a)
	u, err := parseFetchURL(a.URL)
	if err != nil {
		return Target{}, fmt.Errorf("%w: %v", ErrInvalidArgs, err)
	}
	host, port := u.Hostname(), urlPort(u)
	_, private := resolveHost(context.Background(), host)
	return Target{Host: host, Private: private, Sandboxed: w.sb != nil && w.sb.Reaches(host, port)}, nil
}

// fetch gets a.URL, hop by hop: each host is decided (the first by the
// guard before the call ran; redirects here), resolved once and dialled
// at the addresses checked, so a name cannot turn private between the
// check and the connection.
func (w *webFetch) fetch(ctx context.Context, a webFetchArgs) Result {
	timeout := webFetchDefaultTimeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, webFetchMaxTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := parseFetchURL(a.URL)
	if err != nil {
		return Errorf("web_fetch: %v", err)
	}
	var d *FetchDetail // for a hook's tool_response only
	var start time.Time
	if wantsDetail(ctx) {
		d, start = &FetchDetail{URL: a.URL}, time.Now()
	}
	var notes []string
	for hop := 0; ; hop++ {
		addrs, r, ok := w.admit(ctx, u, hop)
		if !ok {
			return r
		}
		resp, err := w.get(ctx, u, addrs)
		if err != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return Errorf("web_fetch: %s did not answer within %s", u, timeout)
			}
			return Errorf("web_fetch: %s: %v", u, err)
		}
		if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			resp.Body.Close()
			next, err := u.Parse(loc)
			if err != nil {
				return Errorf("web_fetch: %s redirected to %q, which is not a URL", u, loc)
			}
			if hop >= webFetchMaxRedirects {
				return Errorf("web_fetch: more than %d redirects (the last to %s)", webFetchMaxRedirects, next)
			}
			notes = append(notes, fmt.Sprintf("redirected from %s", u))
			if u, err = parseFetchURL(next.String()); err != nil {
				return Errorf("web_fetch: redirected to %s: %v", next, err)
			}
			continue
		}
		defer resp.Body.Close()
		res := renderResponse(u, resp, a, notes, d)
		if d != nil && !res.IsError {
			d.Code, d.Took = resp.StatusCode, time.Since(start)
			res.Detail = &Detail{Fetch: d}
		}
		return res
	}
}

// admit decides one hop: under the sandbox its allow-list (as for
// commands), and the permission rules for a redirect's new host or a
// private address. It resolves the host once; the hop dials the
// addresses it returns.
func (w *webFetch) admit(ctx context.Context, u *url.URL, hop int) ([]netip.Addr, Result, bool) {
	host, port := u.Hostname(), urlPort(u)
	if w.sb != nil && !w.sb.Reaches(host, port) {
		note := "sandbox: the network access to " + net.JoinHostPort(host, strconv.Itoa(port)) +
			" was blocked (sandbox.network.allow lists the hosts commands and web_fetch may reach)"
		return nil, Result{Content: "web_fetch: " + note, IsError: true, Blocked: []string{note}}, false
	}
	addrs, private := resolveHost(ctx, host)
	if hop == 0 && !private {
		return addrs, Result{}, true // the guard decided this call
	}
	if w.policy == nil {
		return nil, Errorf("web_fetch: %s cannot be checked against the permission rules here", host), false
	}
	d := w.policy.Decide(permission.Request{Tool: "web_fetch", Class: permission.ClassNetwork, Host: host, Private: private,
		Sandboxed: w.sb != nil})
	switch d.Action {
	case permission.Allow:
		return addrs, Result{}, true
	case permission.Ask:
		return nil, Errorf("web_fetch: redirected to %s, which needs approval: call web_fetch with that URL to ask for it", u), false
	}
	return nil, Errorf("web_fetch: %s: permission denied: %s", u, d.Reason), false
}

// get sends one GET to u without following redirects, dialling only
// addrs, what admit resolved u's host to.
func (w *webFetch) get(ctx context.Context, u *url.URL, addrs []netip.Addr) (*http.Response, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("cannot resolve %s", u.Hostname())
	}
	port := strconv.Itoa(urlPort(u))
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy: nil, // arbor's own environment's proxy is not the sandbox's
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var last error
			for _, a := range addrs {
				c, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
				if err == nil {
					return c, nil
				}
				last = err
			}
			return nil, last
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		DisableKeepAlives:     true,
	}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "arbor-web-fetch/1 (+https://github.com/arbor-run/arbor)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	return client.Do(req)
}

// parseFetchURL accepts absolute http and https URLs with a host.
func parseFetchURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: only http:// and https:// URLs are fetched", s)
	case u.Hostname() == "":
		return nil, fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return nil, fmt.Errorf("%q: credentials in the URL are not sent", s)
	}
	u.Fragment = ""
	return u, nil
}

func urlPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// resolveHost resolves host (an IP literal stands for itself) and reports
// whether any of its addresses is loopback, private, link-local or
// unspecified: an address on this machine or its network, which a
// fetched URL must not reach unless a rule names it. A name that does not
// resolve has no addresses and is not private.
func resolveHost(ctx context.Context, host string) ([]netip.Addr, bool) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		a = a.Unmap()
		return []netip.Addr{a}, privateAddr(a)
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return nil, false
	}
	private := false
	for i, a := range ips {
		ips[i] = a.Unmap()
		private = private || privateAddr(ips[i])
	}
	return ips, private
}

func privateAddr(a netip.Addr) bool {
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsUnspecified() || a.IsInterfaceLocalMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a) // carrier-grade NAT
}

// readCapped reads at most n bytes of r and says whether there was more.
func readCapped(r io.Reader, n int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if int64(len(b)) > n {
		return b[:n], true, err
	}
	return b, false, err
}
