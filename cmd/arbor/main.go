// Command arbor runs LLM agents that build and run their own task trees.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/arbor-run/arbor/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
