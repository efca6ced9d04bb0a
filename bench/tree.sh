#!/usr/bin/env bash
# Runs the coordination tree benchmarks (internal/tree/bench_test.go) and
# prints their figures against the targets: the fan-outs of 1,000 and
# 10,000 nodes in 0.1 s and 1 s at 8 parallel (issue #38), under 1 ms per
# hop and under 256 KiB per active node. Runnable from any directory; COUNT (default 3)
# sets how often each benchmark is repeated; the summary takes the median.
set -euo pipefail

cd "$(dirname "$0")/.."
count="${COUNT:-3}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

# Whole runs of 1,000, 10,000 and 200 nodes take seconds: one run per sample.
go test -run '^$' -bench 'FanOut|Chain200' -benchtime 1x -count "$count" ./internal/tree | tee "$out"
# The others take well under a second per run: more runs per sample.
go test -run '^$' -bench 'DispatchLatency|ActiveNodeMemory|IdleCPU' -benchtime 5x -count "$count" ./internal/tree | tee -a "$out"

source bench/metric.sh

echo
echo "== coordination tree: medians of $count samples =="
for run in 1000/parallel=8:100 1000/parallel=64: 10000/parallel=8:1000; do
	name="BenchmarkFanOutFanIn${run%:*}" target="${run##*:}"
	awk -v run="${run%:*}" -v target="$target" -v ms="$(metric "$out" "$name" ms/run)" -v cpu="$(metric "$out" "$name" cpu-ms/run)" \
		-v ns="$(metric "$out" "$name" ns/node)" -v w="$(metric "$out" "$name" writes/node)" \
		'BEGIN {
			sub("/parallel=", ", parallel ", run)
			printf "fan-out %s: %.0f ms/run (%.0f ms of CPU), %.3f ms/node, %.1f store writes/node", run, ms, cpu, ns / 1e6, w
			if (target != "") printf " (%.2fx of the %d ms target)", ms / target, target
			printf "\n"
		}'
done
awk -v ns="$(metric "$out" BenchmarkChain200 ns/hop)" -v w="$(metric "$out" BenchmarkChain200 writes/hop)" \
	'BEGIN { printf "chain: %.2f ms/hop (%.2fx of the 1 ms target), %.1f store writes/hop\n", ns / 1e6, ns / 1e6, w }'
awk -v us="$(metric "$out" BenchmarkDispatchLatency µs/hop)" \
	'BEGIN { printf "dispatch: %.2f ms/hop from complete to the next model call (%.2fx of the 1 ms target)\n", us / 1e3, us / 1e3 }'
awk -v b="$(metric "$out" BenchmarkActiveNodeMemory B/active-node)" -v s="$(metric "$out" BenchmarkActiveNodeMemory stack-B/active-node)" \
	'BEGIN { printf "memory: %.1f KiB heap/active node (%.2fx of the 256 KiB target), plus %.1f KiB of goroutine stack\n", b / 1024, b / 1024 / 256, s / 1024 }'
awk -v ms="$(metric "$out" BenchmarkIdleCPU cpu-ms/idle-200ms)" \
	'BEGIN { printf "idle: %.2f ms of CPU in 200 ms waiting on an ask (%.3f%% of one core)\n", ms, ms / 200 * 100 }'
