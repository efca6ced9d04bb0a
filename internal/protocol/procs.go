package protocol

import "runtime"

// OneProc runs the Go scheduler of a headless session on one processor,
// unless getenv("GOMAXPROCS") names a number. A session serves one
// conversation: its work is a chain of steps that wait on the model, the
// store and the pipes, and its CPU-heavy work (commands, MCP servers) runs
// in other processes. With the default (one P per core) every session
// keeps per-P caches and spins up idle Ps to look for work, and a gateway
// runs hundreds of sessions on a few cores: on 2 cores at 100 sessions
// all sending at once, one P took the sessions' CPU per turn from 9–10 ms
// to 4–6 ms and their private memory from 6.1 to 5.0 MiB
// (docs/benchmarks.md). Fixing GOMAXPROCS also stops the runtime from
// re-reading the CPU limit in the background.
func OneProc(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
