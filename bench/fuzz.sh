#!/usr/bin/env bash
# Fuzzes every fuzz target of the module in turn (issue #40; see
# docs/fuzzing.md): each `func FuzzX` of a *_test.go file gets its own
# `go test -run '^$' -fuzz '^FuzzX$'`, since go test fuzzes one target per
# run. Prints the executions and the time of each target and exits 1 when
# any failed (go then writes the failing input to the package's
# testdata/fuzz/FuzzX/, to commit as a regression seed once fixed; a clean
# run leaves no file in the repository, the corpus goes to GOCACHE).
#
#   bench/fuzz.sh                         # every target, 20 s each
#   FUZZTIME=10s bench/fuzz.sh            # shorter (CI)
#   FUZZTIME=1000000x bench/fuzz.sh       # exactly a million executions each
#   FUZZ='Serve|Reader' bench/fuzz.sh     # only the targets whose name matches
#   FUZZPARALLEL=2 bench/fuzz.sh          # fuzzing workers per target (default 1)
#   FUZZTIMEOUT=0 FUZZTIME=1h bench/fuzz.sh  # no go test timeout (default 10m)
#   FUZZMINIMIZETIME=2s bench/fuzz.sh     # bound the minimizing of each new input
#
# The executions counted are those of fuzzing proper: go also runs a new
# interesting input many times to minimize it (up to -fuzzminimizetime,
# 60 s by default), uncounted, which in a short run can take most of it.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-20s}"
parallel="${FUZZPARALLEL:-1}"
timeout="${FUZZTIMEOUT:-10m}"
minimize="${FUZZMINIMIZETIME:-60s}"
filter="${FUZZ:-.}"

# Targets as "package-dir name", sorted.
mapfile -t targets < <(
  find . -name '*_test.go' -not -path './.git/*' -not -path '*/node_modules/*' -print0 |
    xargs -0 grep -H -o -E '^func Fuzz[A-Za-z0-9_]*\(' |
    sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|' |
    sort -u
)
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz: no targets found" >&2
  exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
summary=()
for t in "${targets[@]}"; do
  dir=${t% *}
  name=${t#* }
  [[ "$name" =~ $filter ]] || continue
  echo "== $name (./$dir) for $fuzztime"
  start=$SECONDS
  status=ok
  seeds="$dir/testdata/fuzz/$name"
  before=$(ls "$seeds" 2>/dev/null || true)
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" \
    -parallel "$parallel" -timeout "$timeout" "./$dir" >"$log" 2>&1; then
    if grep -aq '^    context deadline exceeded$' "$log" && ! grep -aq 'Failing input written' "$log" &&
      ! grep -aq -e '^panic' -e 'fuzzing process hung' "$log" && [ "$(ls "$seeds" 2>/dev/null || true)" = "$before" ]; then
      # Go before 1.27 may fail a run with a duration -fuzztime as the
      # time runs out, having found nothing (go.dev/issue/75804, a race
      # in its coordinator); a count (FUZZTIME=100000x) has no deadline.
      status="ok (go.dev/issue/75804: the deadline race, no input failed)"
    else
      status=FAIL
      failed+=("$name")
      cat "$log"
    fi
  fi
  # go prints "fuzz: elapsed: 20s, execs: 12345 (617/sec), ..." every 3 s
  # and at the end; the last one is the total.
  execs=$(grep -a -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  elapsed=$(grep -a -o 'fuzz: elapsed: [0-9hms.]*' "$log" | tail -1 | cut -d' ' -f3 || true)
  line=$(printf '%-16s %-34s %12s execs  %8s fuzzing  %4ss in all  %s' "$name" "./$dir" "${execs:-?}" "${elapsed:-?}" "$((SECONDS - start))" "$status")
  echo "$line"
  summary+=("$line")
done

echo
echo "== fuzzing summary (FUZZTIME=$fuzztime, FUZZPARALLEL=$parallel, FUZZMINIMIZETIME=$minimize)"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]} (failing inputs are in the packages' testdata/fuzz/)" >&2
  exit 1
fi
