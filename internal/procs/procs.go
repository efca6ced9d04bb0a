// Package procs runs a one-session process's Go scheduler on one
// processor, and sets that before the rest of arbor initialises.
//
// A headless session serves one conversation: its work is a chain of
// steps that wait on the model, the store and the pipes, and its
// CPU-heavy work (commands, MCP servers) runs in other processes. With the
// default (one P per core) every session keeps per-P caches and spins up
// idle Ps to look for work, and a gateway runs hundreds of sessions on a
// few cores: on 2 cores at 100 sessions all sending at once, one P took
// the sessions' CPU per turn from 9–10 ms to 4–6 ms and their private
// memory from 6.1 to 5.0 MiB (docs/benchmarks.md). Fixing GOMAXPROCS also
// stops the runtime from re-reading the CPU limit in the background.
//
// Why in an initialiser: a change of GOMAXPROCS stops the world and
// flushes the caches of the processors it removes. Made by the headless
// command, after the package initialisers and the flag parsing had used
// the second processor, it left that processor's spans and allocation
// chunks behind (half a MiB of private memory per session) and cost a few
// ms of CPU and 120–200 page faults of a start; made here it costs
// nothing measurable. Go initialises packages in import-path order as
// soon as what they import is initialised, and this package imports only
// os and runtime, so it runs right after os: before the SDKs', the
// store's and the tools' initialisers.
package procs

import (
	"os"
	"runtime"
)

func init() {
	if Headless(os.Args) {
		One(os.Getenv)
	}
}

// Headless reports whether args (os.Args) start arbor's headless command
// the way a client launches it: `arbor headless …`. A command line with
// global flags before the command is the command's to handle (One).
func Headless(args []string) bool { return len(args) > 1 && args[1] == "headless" }

// One runs the Go scheduler on one processor, unless getenv("GOMAXPROCS")
// names a number. Called again it does nothing (GOMAXPROCS does not stop
// the world for the value it already has).
func One(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
