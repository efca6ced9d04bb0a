package testutil

import (
	"net"
	"path/filepath"
	"sync"
	"testing"
)

// SilentListener listens on a unix socket in a temporary directory of t
// and returns its path: it accepts every connection and never answers, as
// a process that is stopped (SIGSTOP) or hung does. The connections and
// the listener are closed when t ends.
func SilentListener(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "silent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		held []net.Conn
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return sock
}
