package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/web"
)

// BenchmarkRunWithSSEClients: one op is a whole 1,000-node fan-out run
// (scripted model over real HTTP, real SQLite), started through the API,
// while 0 or 50 SSE clients (browsers' worth) stream every run's frames.
// The run's speed must not depend on the clients (the bus never waits
// for them); heap-MB is the process's live heap after the run.
func BenchmarkRunWithSSEClients(b *testing.B) {
	const children = 1000
	for _, clients := range []int{0, 50} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			bd := setup(b, nil, setupOpts{respond: fanOut(children)})
			ctx, cancel := context.WithCancel(context.Background())
			var readers sync.WaitGroup
			for i := range clients {
				req, _ := http.NewRequestWithContext(ctx, "GET", bd.http.URL+"/api/runs/-/events", nil)
				res, err := http.DefaultClient.Do(req)
				if err != nil || res.StatusCode != 200 {
					b.Fatalf("client %d: %v", i, err)
				}
				readers.Go(func() {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				})
			}
			b.Cleanup(func() { cancel(); readers.Wait() })
			finished := make(chan string, 16)
			sub := bd.app.Bus.Subscribe(func(ev agent.Event) {
				if f, ok := ev.(*tree.RunFinished); ok {
					finished <- f.RunID
				}
			})
			b.Cleanup(sub.Close)
			var peak uint64
			runs := 0
			for b.Loop() {
				runs++
				var started web.Started
				bd.mustDo("POST", "/api/runs", web.NewRun{Goal: "fan out"}, &started)
				for id := range finished {
					if id == started.ID {
						break
					}
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				if d := bd.run(started.ID); d.Status != "complete" || len(d.Nodes) != children+1 {
					b.Fatalf("run %s with %d nodes", d.Status, len(d.Nodes))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(runs), "ms/run")
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
		})
	}
}
