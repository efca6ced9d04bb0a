package sandbox

import (
	"os/exec"
	"strconv"
	"sync"
)

// A call that may reach the network needs something inside its network
// namespace that listens on 127.0.0.1:proxyPort and carries each
// connection to the call's proxy socket outside. socat does that in a
// couple of milliseconds, so it is the relay wherever it is installed (as
// in Claude Code's sandbox runtime); elsewhere arbor's own binary is (see
// Main), which costs the start of a large Go program per call.

var (
	socatOnce sync.Once
	socatPath string
)

// findSocat is the socat binary on PATH, or "" where none is.
func findSocat() string {
	socatOnce.Do(func() { socatPath, _ = exec.LookPath("socat") })
	return socatPath
}

// socatScript is the sh script that starts socat relaying port to socket,
// waits until it listens, and then runs the command ("$@") in its place.
// socat is started from a subshell that exits at once, so it is the
// namespace init's child rather than the command's: a command that waits
// for all of its children never waits for the relay. The wait reads the
// namespace's TCP table with shell builtins only; the namespace is the
// call's own, so the first listening socket is the relay's. If socat never
// listens (it failed), the command runs anyway and its connections are
// refused, which the tool result explains.
func socatScript(socat, socket string, port int) string {
	return "(" + shellQuote(socat) + " TCP4-LISTEN:" + strconv.Itoa(port) +
		",bind=127.0.0.1,fork,reuseaddr,backlog=1024 UNIX-CONNECT:" + shellQuote(socket) +
		" </dev/null >/dev/null 2>&1 &)\n" +
		"n=0\n" +
		"while [ $n -lt 200000 ]; do\n" +
		"  while read -r _ _ _ st _; do [ \"$st\" = 0A ] && break 2; done </proc/net/tcp\n" +
		"  n=$((n+1))\n" +
		"done\n" +
		"unset n st\n" +
		"exec \"$@\"\n"
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}
