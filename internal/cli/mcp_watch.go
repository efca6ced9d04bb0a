package cli

import (
	"fmt"
	"io"
	"sync"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/mcpclient"
)

// watchMCPFailures prints a line to w when an MCP server fails (once per
// server and failure) until the returned stop is called.
func watchMCPFailures(a *app.App, w io.Writer) (stop func()) {
	var (
		mu      sync.Mutex // guards stopped, told and writes to w
		stopped bool
		told    = map[string]string{}
	)
	a.OnMCPChange(func() {
		st := a.MCPStatus()
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, s := range st {
			if s.State == mcpclient.StateFailed && told[s.Name] != s.Error {
				told[s.Name] = s.Error
				fmt.Fprintf(w, "arbor: MCP server %s failed: %s (its tools are not available)\n", s.Name, s.Error)
			}
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}
