package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpserver"
)

// TestHTTPSessionsEndWhenIdle: over HTTP a client's session that gets no
// request for the idle time is closed, and the client's next request is
// refused (404: the transport's specification has it start a new
// session, which works); with requests coming it stays. Before, the
// sessions of clients that went away without ending them stayed for
// the life of the process.
func TestHTTPSessionsEndWhenIdle(t *testing.T) {
	t.Parallel()
	b := setup(t, func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "unused"} })
	s, _ := b.rootServer(t, "http-idle")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	diag := &syncBuffer{}
	const idle = time.Second
	served := make(chan error, 1)
	go func() { served <- mcpserver.ServeHTTP(ctx, s.MCP(), "127.0.0.1:0", "", idle, diag) }()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if _, after, ok := strings.Cut(diag.String(), "MCP server on "); ok {
			url = strings.TrimSpace(after)
		} else if time.Now().After(deadline) {
			t.Fatalf("the server never said where it listens: %q", diag.String())
		}
	}
	connect := func() *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	sessions := func() int {
		n := 0
		for range s.MCP().Sessions() {
			n++
		}
		return n
	}
	cs := connect()
	// Requests more often than idle keep the session.
	for range 5 {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("a session in use was ended: %v", err)
		}
		time.Sleep(idle / 10)
	}
	// Then none: the server closes it.
	for deadline := time.Now().Add(30 * time.Second); sessions() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still open long after %s without a request", sessions(), idle)
		}
	}
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Fatal("a request on the closed session was served")
	}
	if _, err := connect().ListTools(ctx, nil); err != nil {
		t.Fatalf("a new session after the old one ended: %v", err)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a writer the test reads while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
