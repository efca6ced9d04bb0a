package llm

import (
	"net/http"
	"sync"
)

// bodyBuffer is the write buffer of a connection to a model server: room
// for a whole request body of the usual size (a session's tool schemas and
// a few turns) after the request's headers.
const bodyBuffer = 64 << 10

// transport is http.DefaultTransport's settings (the proxy from the
// environment, HTTP/2 where TLS offers it, its idle connections and
// timeouts) with a larger write buffer. Over HTTP/1.1 net/http copies a
// body of known length through a fresh buffer of up to 32 KiB whenever it
// does not fit the connection's write buffer (4 KiB by default), so every
// request of a turn allocated one, touching as many new pages until the
// process first collects; a body that fits is written through the
// connection's one buffer instead (docs/benchmarks.md, "Eleventh round").
// HTTP/2 connections write bodies through their own pooled buffers.
var transport = sync.OnceValue(func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.WriteBufferSize = bodyBuffer
	return t
})

// NewHTTPClient is the client a provider talks to its model server with
// when it is given none. It has no client-wide timeout, since streams are
// long: stalls are caught by the retry policy's stall timeout. The clients
// share one transport and so one pool of connections.
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: transport()}
}
