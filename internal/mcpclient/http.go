package mcpclient

import (
	"io"
	"mime"
	"net/http"
	"net/url"
)

// httpClient is the HTTP client of the server's transport to endpoint:
// it adds the entry's headers to every request to endpoint's scheme and
// host (not to where a redirect leads: they hold tokens) and reads no
// more than maxMessage of a body that is one message (anything but an
// event stream, whose events the SDK bounds), which the SDK would read
// whole into memory.
func (s *server) httpClient(endpoint string, headers map[string]string) *http.Client {
	t := httpTransport{headers: headers, next: http.DefaultTransport, tooLarge: s.tooLarge}
	if u, err := url.Parse(endpoint); err == nil {
		t.scheme, t.host = u.Scheme, u.Host
	}
	return &http.Client{Transport: t}
}

// tooLarge notes a message larger than maxMessage.
func (s *server) tooLarge() { s.oversized.Add(1) }

type httpTransport struct {
	headers      map[string]string
	scheme, host string // where the headers go
	next         http.RoundTripper
	tooLarge     func()
}

func (h httpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 && r.URL.Scheme == h.scheme && r.URL.Host == h.host {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	resp, err := h.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxMessage, tooLarge: h.tooLarge}
	}
	return resp, nil
}

// limitedBody fails with ErrMessageTooLarge past its limit.
type limitedBody struct {
	io.ReadCloser
	left     int
	tooLarge func()
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrMessageTooLarge
	}
	n, err := b.ReadCloser.Read(p[:min(len(p), b.left+1)])
	if b.left -= n; b.left < 0 {
		b.tooLarge()
		return 0, ErrMessageTooLarge
	}
	return n, err
}
