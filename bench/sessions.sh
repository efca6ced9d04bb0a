#!/usr/bin/env bash
# Many `arbor headless` sessions on one machine, as a gateway that runs one
# arbor process per chat would (issue #38): N sessions (default 10) against
# one scripted model server (internal/llm/llmtest, served by the driver
# bench/sessions). Prints the time until all are ready, PSS and private
# memory per session (/proc/PID/smaps_rollup) at ready and after the turns,
# what a start cost each session (CPU, page faults, context switches), the
# CPU the idle sessions use over IDLE (default 10s, starting 2 s after the
# last ready), and send→idle p50/p99 with all N sending at once, ROUNDS
# times (default 3), with the CPU, page faults and context switches of a
# turn.
#
#   N=1000 bench/sessions.sh
#   PARALLEL=8 (processes started at a time), SEPARATE=1 (a state dir per
#   session instead of one shared store)
#   TAGS=lean,sqlite_cgo (build tags for the arbor binary under test);
#   CGO_ENABLED=0 TAGS=lean builds the static lean binary a gateway would
#   (docs/headless-envelope.md, "A lean build")
#
# N processes need N×3 pipes in the driver and about 8 threads each: the
# script raises the open-file limit to its hard limit and says so, and
# prints kernel.pid_max and kernel.threads-max, which it does not change.
# Every session gets HOME and XDG dirs in a temp dir: the user's files are
# untouched. Runnable from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -tags "${TAGS:-}" -o "$tmp/arbor" ./cmd/arbor
go build -o "$tmp/sessions-bench" ./bench/sessions
n="${N:-10}"
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((n * 4 + 256)) ]; then
	ulimit -n "$(ulimit -Hn)"
	echo "raised the open-file limit to $(ulimit -n)"
fi
echo "kernel.pid_max $(cat /proc/sys/kernel/pid_max), kernel.threads-max $(cat /proc/sys/kernel/threads-max); load: $(uptime | sed 's/.*load/load/')"
echo "arbor binary: $(($(stat -c %s "$tmp/arbor") / 1048576)) MiB"
sep=()
[ -n "${SEPARATE:-}" ] && sep=(-separate)
"$tmp/sessions-bench" -arbor "$tmp/arbor" -dir "$tmp" -n "$n" -parallel "${PARALLEL:-8}" \
	-rounds "${ROUNDS:-3}" -idle "${IDLE:-10s}" "${sep[@]}"
echo "load after: $(uptime | sed 's/.*load/load/')"
