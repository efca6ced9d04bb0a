//go:build !lean

package cli

import (
	"fmt"
	"io"
	"sync"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/mcpclient"
	"github.com/arbor-run/arbor/internal/tui"
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

// showMCPFailures keeps the live view's list of failed MCP servers
// current until the returned stop is called.
func showMCPFailures(a *app.App, live *tui.Live) (stop func()) {
	var (
		mu      sync.Mutex // guards stopped
		stopped bool
	)
	update := func() {
		var failed []tui.MCPFailure
		for _, s := range a.MCPStatus() {
			if s.State == mcpclient.StateFailed {
				failed = append(failed, tui.MCPFailure{Name: s.Name, Error: s.Error})
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			live.SetMCPFailures(failed)
		}
	}
	a.OnMCPChange(update)
	update()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}
