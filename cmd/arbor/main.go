// Command arbor runs LLM agents that build and run their own task trees.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"syscall"

	"github.com/arbor-run/arbor/internal/cli"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

func main() {
	// Inside the sandbox arbor's binary is the helper in front of a
	// confined command; sandbox.Main runs it and exits.
	sandbox.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// ARBOR_CPUPROFILE=FILE writes a CPU profile of the whole process
	// (go tool pprof FILE): for finding where a worker's time goes.
	if path := os.Getenv("ARBOR_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "arbor: ARBOR_CPUPROFILE: %v\n", err)
		}
	}
	// ARBOR_TRACE=FILE writes an execution trace (go tool trace FILE):
	// where a turn's time goes between goroutines, system calls and the
	// network, which a CPU profile does not show.
	if path := os.Getenv("ARBOR_TRACE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "arbor: ARBOR_TRACE: %v\n", err)
		}
	}
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
