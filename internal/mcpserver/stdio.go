package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/protocol"
)

// ServeStdio serves srv on in and out, one JSON-RPC message a line (MCP's
// stdio transport), until in ends or ctx does. A line that is no message
// (not JSON, not an object, longer than protocol.MaxLine, not JSON-RPC
// 2.0, neither a request nor a response) is reported on diag with its
// number and skipped, and the session goes on: the SDK's own transport
// ends the session at the first such line, and the run the client hosts
// with it.
func ServeStdio(ctx context.Context, srv *mcp.Server, in io.Reader, out, diag io.Writer) error {
	signalled := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() {
		err := protocol.NewReader(in, 0).Untyped().Each(ctx, func(l protocol.Line) bool {
			if why := notMessage(l.Raw); why != "" {
				fmt.Fprintf(diag, "arbor: mcp: input line %d: %s; skipped\n", l.Number, why)
				return true
			}
			_, err := pw.Write(append(l.Raw, '\n'))
			return err == nil // the session ended
		}, func(le *protocol.LineError) {
			fmt.Fprintf(diag, "arbor: mcp: input %v; skipped\n", le)
		})
		_ = pw.CloseWithError(err) // nil: the input ended
	})
	// The replies go through an outbox, so a client that stops reading
	// blocks no handler: the SDK waits for its handlers before Run
	// returns, and a signalled process must still end (within
	// protocol.ShutdownGrace). A client that is gone ends the session.
	ob := protocol.NewOutbox(out, func(err error) {
		fmt.Fprintf(diag, "arbor: mcp: %v; the session ends\n", err)
		cancel()
	})
	err := srv.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: nopWriteCloser{ob}})
	cancel()
	_ = pr.Close() // a line waiting to be read is dropped
	wg.Wait()
	ob.CloseAfter(signalled)
	return err
}

// notMessage says why raw (a JSON object) is no JSON-RPC 2.0 message, ""
// when it is one.
func notMessage(raw json.RawMessage) string {
	var m struct {
		JSONRPC string           `json:"jsonrpc"`
		Method  *string          `json:"method"`
		Result  *json.RawMessage `json:"result"`
		Error   *json.RawMessage `json:"error"`
	}
	switch {
	case json.Unmarshal(raw, &m) != nil:
		return "not a JSON-RPC message (a field has the wrong type)"
	case m.JSONRPC != "2.0":
		return `not JSON-RPC 2.0 ("jsonrpc" is not "2.0")`
	case m.Method == nil && m.Result == nil && m.Error == nil:
		return "neither a request nor a response (no method, result or error)"
	}
	return ""
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
