package mcpclient

import (
	"io"
	"mime"
	"net/http"
)

// httpClient is the HTTP client of the server's transport: it adds the
// entry's headers to every request and reads no more than maxMessage of
// a body that is one message (anything but an event stream, whose events
// the SDK bounds), which the SDK would read whole into memory.
func (s *server) httpClient(headers map[string]string) *http.Client {
	return &http.Client{Transport: httpTransport{headers: headers, next: http.DefaultTransport, tooLarge: s.tooLarge}}
}

// tooLarge notes a message larger than maxMessage.
func (s *server) tooLarge() { s.oversized.Add(1) }

type httpTransport struct {
	headers  map[string]string
	next     http.RoundTripper
	tooLarge func()
}

func (h httpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
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
