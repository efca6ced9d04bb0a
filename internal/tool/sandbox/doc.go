// Package sandbox confines the processes arbor starts for agents, so that
// a shell command can run without a person approving it: it may write only
// in the workspace (and a node's worktree, and paths the config adds) and
// a private /tmp; it cannot read the paths that hold secrets (~/.ssh, keys,
// arbor's own config and state); it has no network but what an allow-list
// lets through a proxy arbor runs; it runs in a PID namespace of its own,
// so a call's every process dies with the call, with its node, and with
// arbor; and a fork bomb ends without taking the tree with it.
//
// The mechanism is bubblewrap (Debian's bubblewrap package, the one Claude
// Code's sandbox runtime uses on Linux): user, mount, PID, network, IPC and
// UTS namespaces, no daemon, no root. Detect says whether it works here.
// When a network allow-list is set, arbor's own binary runs inside as a
// small helper in front of the command (Main) that forwards the proxy
// port; the process count is watched from outside (watch.go).
//
// The shell tool, background jobs and the headless protocols' local shell
// ask Wrap for a confined command line; nothing else knows how confinement
// works. Explain and Call.Done turn what was blocked into lines for the
// model (the path, the host), so that it can adapt.
//
// Invariants: a Wrap never widens the policy; every goroutine a call's
// proxy starts ends in Call.Done; the private temp dir is removed by Close.
package sandbox
