#!/usr/bin/env bash
# The sandbox's overhead per command (issue #29's target: a median extra
# time per confined call of at most 15 ms). Runs BenchmarkTrue of
# internal/tool/sandbox COUNT times (default 5) with N calls each (default
# 60) and prints, for each way of running `bash -c true`, the median call
# and the extra time over running it plain. Runnable from any directory;
# needs bubblewrap (and socat for the allow-list row).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/metric.sh
count="${COUNT:-5}" n="${N:-60}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
go test -run '^$' -bench 'BenchmarkTrue' -benchtime "${n}x" -count "$count" ./internal/tool/sandbox >"$out"
plain="$(metric "$out" BenchmarkTrue/plain ms/median)"
printf '%-32s %10s %10s\n' "bash -c true" "median ms" "extra ms"
for row in plain confined confined-proxy confined-proxy-helper; do
	m="$(metric "$out" "BenchmarkTrue/$row" ms/median)"
	printf '%-32s %10.1f %10.1f\n' "$row" "$m" "$(awk -v a="$m" -v b="$plain" 'BEGIN { print a - b }')"
done
