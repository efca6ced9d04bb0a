#!/usr/bin/env bash
# Measures `arbor headless --protocol stream-json`: the time from process
# start to the system init line that answers initialize, and the process's
# resident memory then (VmRSS) and at its peak (VmHWM). No model is called:
# init needs only configuration. Runs N times (default 20) and prints the
# median and the worst. Runnable from any directory.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${N:-20}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/arbor" ./cmd/arbor

export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" XDG_STATE_HOME="$tmp/state"
export ANTHROPIC_API_KEY=bench-not-a-key ANTHROPIC_BASE_URL=http://127.0.0.1:9 ARBOR_MODEL=anthropic/claude-sonnet-4-5
init='{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}'

ms=() rss=() hwm=()
for _ in $(seq "$n"); do
	coproc ARBOR { exec "$tmp/arbor" headless --protocol stream-json 2>/dev/null; }
	start=$(date +%s%N)
	printf '%s\n' "$init" >&"${ARBOR[1]}"
	while IFS= read -r line <&"${ARBOR[0]}"; do
		case "$line" in *'"subtype":"init"'*) break ;; esac
	done
	end=$(date +%s%N)
	ms+=("$(( (end - start) / 1000 ))")
	rss+=("$(awk '/^VmRSS/ {print $2}' "/proc/$ARBOR_PID/status")")
	hwm+=("$(awk '/^VmHWM/ {print $2}' "/proc/$ARBOR_PID/status")")
	exec {ARBOR[1]}>&-
	wait "$ARBOR_PID" || true
done

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
worst() { printf '%s\n' "$@" | sort -n | tail -1; }
printf 'stream-json, %d runs (the first includes a cold page cache)\n' "$n"
printf 'time to system init: median %s ms, worst %s ms\n' "$(awk -v u="$(median "${ms[@]}")" 'BEGIN {printf "%.1f", u / 1000}')" "$(awk -v u="$(worst "${ms[@]}")" 'BEGIN {printf "%.1f", u / 1000}')"
printf 'RSS at init: median %d KiB; peak RSS: median %d KiB\n' "$(median "${rss[@]}")" "$(median "${hwm[@]}")"
