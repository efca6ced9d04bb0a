package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol"
)

// TestConnFlood makes many calls at once while a client answers them as
// they come and notifications go out between them; then the connection
// closes under calls still waiting. Every call gets its own answer or
// ErrDisconnected, every line is whole, nothing blocks (run with -race).
func TestConnFlood(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	ob := protocol.NewOutbox(pw, func(err error) { t.Errorf("write: %v", err) })
	c := newConn(ob)

	// The client: answers every request with its own id as the result,
	// but holds the ones whose id is a multiple of 7 until the close.
	client := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		answered, notes := 0, 0
		for sc.Scan() {
			var m message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("line %q: %v", sc.Text(), err)
				continue
			}
			if len(m.ID) == 0 {
				notes++
				continue
			}
			n, _ := strconv.Atoi(string(m.ID))
			if n%7 == 0 {
				continue
			}
			answered++
			c.deliver(message{JSONRPC: "2.0", ID: m.ID, Result: json.RawMessage(strconv.Itoa(n))})
		}
		client <- notes
	}()

	const callers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	got, disconnected := 0, 0
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var res int
				err := c.call(context.Background(), "x/echo", struct{}{}, &res)
				mu.Lock()
				switch {
				case errors.Is(err, ErrDisconnected):
					disconnected++
				case err != nil:
					t.Errorf("call: %v", err)
				case res == 0 || res%7 == 0:
					t.Errorf("call answered %d", res)
				default:
					got++
				}
				mu.Unlock()
				if err := c.notify("x/note", struct{}{}); err != nil {
					t.Error(err)
				}
				if err != nil {
					return // after the close, nothing more is asked
				}
			}
		}()
	}
	// Close once a call waits on an answer that will never come: each
	// caller's loop stops at its first such call.
	waiting := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.calls)
	}
	for waiting() < callers {
		// Every caller ends up waiting on an id that is a multiple of 7.
		runtime.Gosched()
	}
	c.close()
	wg.Wait()
	if disconnected != callers {
		t.Fatalf("%d calls ended disconnected; want one per caller (%d)", disconnected, callers)
	}
	if err := c.call(context.Background(), "x/late", nil, nil); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("a call after close = %v; want ErrDisconnected", err)
	}
	ob.Close()
	pw.Close()
	if notes := <-client; notes != got+disconnected {
		t.Fatalf("notifications read = %d; want %d, one per call", notes, got+disconnected)
	}
}
