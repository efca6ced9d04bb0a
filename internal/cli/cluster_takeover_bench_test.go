package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// BenchmarkClusterTakeover measures how soon the turn a dead driver ran
// itself goes on (issue #38): one op starts a worker, submits a run
// whose leaf's tool that worker runs (it is the only one), starts a
// second worker, SIGKILLs the first in the middle of the tool and times
// the kill → the leaf's next model request, which the second worker
// makes after it drove the run and claimed the leaf. host=same runs both
// workers on this machine; host=other runs the killed one under another
// host name in a UTS namespace of its own (unshare --uts, as root), so
// its pid says nothing to the survivor and the leases must expire, as
// across machines. lease=… passes --lease-ttl and --heartbeat to both.
//
//	go test -run '^$' -bench ClusterTakeover -benchtime 5x ./internal/cli
func BenchmarkClusterTakeover(b *testing.B) {
	for _, c := range []struct {
		name  string
		other bool
		flags []string
	}{
		{"host=same/lease=default", false, nil},
		{"host=other/lease=default", true, nil},
		{"host=same/lease=1500ms", false, []string{"--lease-ttl", "1500ms", "--heartbeat", "500ms"}},
		{"host=other/lease=1500ms", true, []string{"--lease-ttl", "1500ms", "--heartbeat", "500ms"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if c.other {
				if _, err := exec.LookPath("unshare"); err != nil || os.Geteuid() != 0 {
					b.Skip("host=other needs unshare --uts as root")
				}
			}
			benchmarkTakeover(b, c.other, c.flags)
		})
	}
}

func benchmarkTakeover(b *testing.B, other bool, flags []string) {
	var (
		mu     sync.Mutex
		served = map[string]time.Time{} // goal/turn → first served
	)
	dir := b.TempDir()
	n := 0
	bc := newBenchCluster(b, 0, 4, func(req llmtest.Request) llmtest.Turn {
		goal, turn := treetest.GoalOf(req), treetest.Turns(req)
		mu.Lock()
		if _, ok := served[fmt.Sprintf("%s/%d", goal, turn)]; !ok {
			served[fmt.Sprintf("%s/%d", goal, turn)] = time.Now()
		}
		mu.Unlock()
		leaf, isLeaf := strings.CutPrefix(goal, "leaf ")
		switch {
		case isLeaf && turn == 0:
			return treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $PPID > " + filepath.Join(dir, leaf) + "; exec sleep 60"}))
		case isLeaf:
			return treetest.Complete("leaf done")
		case turn == 0:
			return treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "leaf " + strings.TrimPrefix(goal, "root "), "prompt": "p"}))
		default:
			return treetest.Complete("done")
		}
	})
	var takeovers []time.Duration
	for b.Loop() {
		n++
		args := append([]string{"worker", "--listen", "127.0.0.1", "--store", bc.dsn, "--concurrency", "4", "--yes"}, flags...)
		victim := startWorker(b, bc, other, args)
		id := bc.submit(b, fmt.Sprintf("root %d", n), 4)
		pidFile := filepath.Join(dir, strconv.Itoa(n))
		waitUntil(b, time.Minute, "the leaf's tool to run", func() bool {
			mu.Lock()
			_, drafted := served[fmt.Sprintf("root %d/1", n)]
			mu.Unlock()
			_, err := os.Stat(pidFile)
			return drafted && err == nil
		})
		survivor := startWorker(b, bc, false, args)
		_ = victim.cmd.Process.Signal(syscall.SIGKILL)
		<-victim.exited
		killed := time.Now()
		bc.wait(b, id)
		mu.Lock()
		takeovers = append(takeovers, served[fmt.Sprintf("leaf %d/1", n)].Sub(killed))
		mu.Unlock()
		_ = survivor.cmd.Process.Signal(syscall.SIGTERM)
		<-survivor.exited
	}
	slices.Sort(takeovers)
	b.Logf("takeovers: %v", takeovers)
	b.ReportMetric(float64(takeovers[len(takeovers)/2].Milliseconds()), "ms/takeover-median")
	b.ReportMetric(float64(takeovers[len(takeovers)-1].Milliseconds()), "ms/takeover-max")
	b.ReportMetric(0, "ns/op")
}

// startWorker starts arbor with args on bc's store and waits until it
// serves; other runs it under the host name arbor-other in a UTS
// namespace of its own (the same pid: unshare and sh exec it).
func startWorker(b *testing.B, bc *benchCluster, other bool, args []string) *proc {
	b.Helper()
	p := &proc{cmd: bc.e.cmd(context.Background(), args...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	if other {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			b.Fatal(err)
		}
		p.cmd.Path = unshare
		p.cmd.Args = append([]string{"unshare", "--uts", "sh", "-c", `hostname arbor-other && exec "$@"`, "sh", arborBin}, args...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(p.exited)
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
	}()
	b.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	waitUntil(b, time.Minute, "a worker to serve", func() bool { return strings.Contains(p.stderr.String(), "serving queue") })
	return p
}
