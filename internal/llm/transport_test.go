package llm

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestRequestBodiesGoThroughTheConnectionsBuffer: a request of a
// session's usual size (24 KiB) leaves the client's transport in one
// write to the connection, its body copied into the connection's own
// write buffer after the headers. With http.DefaultTransport's 4 KiB
// buffer the headers go first and the body follows in further writes,
// through a buffer net/http allocates for the copy. Also: providers'
// clients share one transport.
func TestRequestBodiesGoThroughTheConnectionsBuffer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	body := bytes.Repeat([]byte("x"), 24<<10)
	// writes posts body through a copy of tr whose connections count
	// their writes.
	writes := func(tr *http.Transport) []int {
		tr = tr.Clone()
		defer tr.CloseIdleConnections()
		var (
			mu    sync.Mutex
			sizes []int
		)
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return writeCounter{c, func(n int) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() }}, nil
		}
		resp, err := (&http.Client{Transport: tr}).Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		return sizes
	}
	ours := NewHTTPClient()
	if w := writes(ours.Transport.(*http.Transport)); len(w) != 1 || w[0] < len(body) {
		t.Errorf("a request with a %d-byte body went out in writes of %v bytes, not in one", len(body), w)
	}
	if w := writes(http.DefaultTransport.(*http.Transport)); len(w) < 2 {
		t.Errorf("the default transport wrote the request in writes of %v bytes: the test no longer tells the two apart", w)
	}
	if NewHTTPClient().Transport != ours.Transport {
		t.Error("two clients have transports of their own")
	}
}

// writeCounter is a connection that reports the size of every write.
type writeCounter struct {
	net.Conn
	wrote func(int)
}

func (c writeCounter) Write(p []byte) (int, error) {
	c.wrote(len(p))
	return c.Conn.Write(p)
}
