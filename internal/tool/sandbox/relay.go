package sandbox

import (
	"os/exec"
	"strconv"
	"strings"
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

// findSocat is the socat binary on PATH, or "" where none is (or no bash
// to run the relay's script).
func findSocat() string {
	socatOnce.Do(func() {
		if _, err := exec.LookPath("bash"); err == nil {
			socatPath, _ = exec.LookPath("socat")
		}
	})
	return socatPath
}

// relayWait is a FIFO in the sandbox's private /tmp that nobody writes:
// the relay's script waits on it, with a timeout, between looks at whether
// socat listens yet, so that it gives the CPU to socat rather than spin.
const relayWait = ".arbor-relay-wait"

// socatScript is the bash script that starts socat relaying port to
// socket, waits until it listens, and then runs the command ("$@") in its
// place. socat is started from a subshell that exits at once, so it is the
// namespace init's child rather than the command's: a command that waits
// for all of its children never waits for the relay. The wait reads the
// namespace's TCP table with builtins only (the namespace is the call's
// own, so the first listening socket is the relay's), half a millisecond
// at a time, for at most a few seconds. If socat never listens (it
// failed), the command runs anyway and its connections are refused, which
// the tool result explains.
func socatScript(socat, socket string, port int) string {
	return "(" + shellQuote(socat) + " TCP4-LISTEN:" + strconv.Itoa(port) +
		",bind=127.0.0.1,fork,reuseaddr,backlog=1024 UNIX-CONNECT:" + shellQuote(socket) +
		" </dev/null >/dev/null 2>&1 &)\n" +
		"exec 9<>/tmp/" + relayWait + "\n" +
		"n=0\n" +
		"while [ $n -lt 5000 ]; do\n" +
		"  while read -r _ _ _ st _; do [ \"$st\" = 0A ] && break 2; done </proc/net/tcp\n" +
		"  read -r -t 0.0005 -u 9 _\n" +
		"  n=$((n+1))\n" +
		"done\n" +
		"exec 9<&-\n" +
		"unset n st\n" +
		"exec \"$@\"\n"
}

// shellQuote quotes s for the shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
