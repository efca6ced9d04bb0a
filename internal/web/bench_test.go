package web_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/web"
)

// BenchmarkRunWithSSEClients: a 1,000-node fan-out run (scripted model
// over real HTTP, real SQLite), started through the API, on a server with
// no SSE client and on one with 50 (browsers' worth) streaming every
// run's frames. One op is one run on each, alternating, so both see the
// same machine load. The run's speed must not depend on the clients (the
// bus never waits for them): ratio is ms/run with 50 clients over ms/run
// with none. live-heap-MB is the process's heap after a GC at the end
// (both servers, the 50 clients' queues and connections included);
// KB/client is what each client received per run.
func BenchmarkRunWithSSEClients(b *testing.B) {
	const children, clients = 1000, 50
	quiet := newBenchServer(b, children, 0)
	busy := newBenchServer(b, children, clients)
	var tQuiet, tBusy time.Duration
	runs := 0
	for b.Loop() {
		tQuiet += quiet.runOnce(b)
		tBusy += busy.runOnce(b)
		runs++
	}
	b.StopTimer()
	withClients := heapInuse()
	busy.closeClients()
	perClient := (float64(withClients) - float64(heapInuse())) / clients
	n := float64(runs)
	b.ReportMetric(float64(tQuiet.Milliseconds())/n, "ms/run-0-clients")
	b.ReportMetric(float64(tBusy.Milliseconds())/n, "ms/run-50-clients")
	b.ReportMetric(float64(tBusy)/float64(tQuiet), "ratio")
	b.ReportMetric(float64(withClients)/(1<<20), "live-heap-MB")
	b.ReportMetric(perClient/1024, "heap-KB/client")
	b.ReportMetric(float64(busy.read.Load())/1024/float64(clients)/n, "KB/client")
}

type benchServer struct {
	*bundle
	finished     chan string
	read         atomic.Int64 // bytes the clients received
	closeClients func()       // disconnects the clients and waits for them
}

// heapInuse is the heap in use after a GC.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func newBenchServer(b *testing.B, children, clients int) *benchServer {
	s := &benchServer{bundle: setup(b, nil, setupOpts{respond: fanOut(children)}), finished: make(chan string, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	var readers sync.WaitGroup
	for i := range clients {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.http.URL+"/api/runs/-/events", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("client %d: %v", i, err)
		}
		readers.Go(func() {
			_, _ = io.Copy(counter{&s.read}, res.Body)
			res.Body.Close()
		})
	}
	s.closeClients = func() {
		cancel()
		readers.Wait()
		// The server's handlers see the disconnect on their next write
		// or keep-alive; wait until the hub let go of every client.
		for s.web.Clients() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	b.Cleanup(s.closeClients)
	sub := s.app.Bus.Subscribe(func(ev agent.Event) {
		if f, ok := ev.(*tree.RunFinished); ok {
			s.finished <- f.RunID
		}
	})
	b.Cleanup(sub.Close)
	return s
}

// runOnce starts a run and returns how long it took to finish.
func (s *benchServer) runOnce(b *testing.B) time.Duration {
	start := time.Now()
	var started web.Started
	s.mustDo("POST", "/api/runs", web.NewRun{Goal: "fan out"}, &started)
	for id := range s.finished {
		if id == started.ID {
			break
		}
	}
	took := time.Since(start)
	if d := s.run(started.ID); d.Status != "complete" || len(d.Nodes) != 1001 {
		b.Fatalf("run %s with %d nodes", d.Status, len(d.Nodes))
	}
	return took
}

// counter counts the bytes written to it.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}
