// Command arbor runs LLM agents that build and run their own task trees.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/arbor-run/arbor/internal/cli"
	// Sets `arbor headless`'s one processor in its initialiser, before
	// the other packages' initialisers run (see the package).
	_ "github.com/arbor-run/arbor/internal/procs"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

func main() {
	// Inside the sandbox arbor's binary is the helper in front of a
	// confined command; sandbox.Main runs it and exits.
	sandbox.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// ARBOR_CPUPROFILE=FILE writes a CPU profile of the whole process
	// (go tool pprof FILE): for finding where a worker's time goes.
	// ARBOR_TRACE=FILE writes an execution trace (go tool trace FILE):
	// where a turn's time goes between goroutines, system calls and the
	// network, which a CPU profile does not show.
	startWriting("ARBOR_CPUPROFILE", pprof.StartCPUProfile)
	startWriting("ARBOR_TRACE", trace.Start)
	code := cli.Run(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	pprof.StopCPUProfile()
	trace.Stop()
	// ARBOR_MEMPROFILE=FILE writes the live heap at exit, after a
	// collection (go tool pprof FILE): what a long session keeps.
	if path := os.Getenv("ARBOR_MEMPROFILE"); path != "" {
		runtime.GC()
		f, err := os.Create(path)
		if err == nil {
			err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "arbor: ARBOR_MEMPROFILE: %v\n", err)
		}
	}
	os.Exit(code)
}

// startWriting starts start on the file that the environment variable
// name names, if it is set, and says on stderr why it could not.
func startWriting(name string, start func(io.Writer) error) {
	path := os.Getenv(name)
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = start(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "arbor: %s: %v\n", name, err)
	}
}
