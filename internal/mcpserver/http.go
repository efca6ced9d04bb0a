package mcpserver

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TokenEnv holds the bearer token of `arbor mcp --http` when --token is
// not given.
const TokenEnv = "ARBOR_MCP_TOKEN"

// CheckBind refuses an --http address that does not parse, and
// a non-loopback one without a token.
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--http %s is not a loopback address: set a bearer token with --token or %s, or bind to 127.0.0.1", addr, TokenEnv)
}

// DefaultIdleSession is how long an HTTP client's MCP session lasts
// without a request (arbor mcp --idle-session).
const DefaultIdleSession = time.Hour

// ServeHTTP serves srv over streamable HTTP on addr until ctx ends,
// refusing requests without "Authorization: Bearer token" when token is
// set; it says on diag where it listens. A client's session that gets no
// request for idle is closed (0: never): a client that went away without
// ending its session (a crash, a restart) leaves nothing behind for
// longer, and one that comes back gets 404 for the old session and starts
// a new one, as the transport's specification asks of it.
func ServeHTTP(ctx context.Context, srv *mcp.Server, addr, token string, idle time.Duration, diag io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: idle})
	if token != "" {
		h = bearer(token, h)
	}
	hs := &http.Server{Handler: h}
	fmt.Fprintf(diag, "arbor: MCP server on http://%s/mcp\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
		// Streams of waiting clients never go idle: give them a moment,
		// then cut them.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
		<-done
		return nil
	case err := <-done:
		return fmt.Errorf("--http: %w", err)
	}
}

// bearer refuses requests without "Authorization: Bearer token".
func bearer(token string, next http.Handler) http.Handler {
	want := "Bearer " + token
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); !constantEqual(got, want) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="arbor"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func constantEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
