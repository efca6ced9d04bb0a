#!/usr/bin/env bash
# Shows that a slow event subscriber (10 ms per event, a client that reads
# its output slowly) does not slow the agents or the engine: runs
# BenchmarkStep and BenchmarkDispatchLatency with and without such a
# subscriber, alternating, ROUNDS times (default 5), and prints the median
# of each and their ratio. A ratio near 1 (within the spread of the rounds)
# is the expected result; before the bus gave each subscriber its own queue,
# every event waited 10 ms for it.
set -euo pipefail

cd "$(dirname "$0")/.."
rounds="${ROUNDS:-5}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/agent.test" ./internal/agent
go test -c -o "$dir/tree.test" ./internal/tree

out="$dir/out"
for _ in $(seq "$rounds"); do
	"$dir/agent.test" -test.run '^$' -test.bench '^BenchmarkStep$' -test.benchtime 2000x
	"$dir/agent.test" -test.run '^$' -test.bench '^BenchmarkStepSlowSubscriber$' -test.benchtime 2000x
	"$dir/tree.test" -test.run '^$' -test.bench '^BenchmarkDispatchLatency$' -test.benchtime 3x
	"$dir/tree.test" -test.run '^$' -test.bench '^BenchmarkDispatchLatencySlowSubscriber$' -test.benchtime 3x
done | grep '^Benchmark' | tee "$out"

source bench/metric.sh

echo
echo "== a subscriber taking 10 ms per event: medians of $rounds rounds =="
awk -v a="$(metric "$out" BenchmarkStep ns/op)" -v b="$(metric "$out" BenchmarkStepSlowSubscriber ns/op)" \
	'BEGIN { printf "step: %.0f µs, with the slow subscriber %.0f µs (ratio %.2f)\n", a / 1e3, b / 1e3, b / a }'
awk -v a="$(metric "$out" BenchmarkDispatchLatency µs/hop)" -v b="$(metric "$out" BenchmarkDispatchLatencySlowSubscriber µs/hop)" \
	'BEGIN { printf "dispatch: %.0f µs/hop, with the slow subscriber %.0f µs/hop (ratio %.2f)\n", a, b, b / a }'
