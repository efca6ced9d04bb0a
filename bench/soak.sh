#!/usr/bin/env bash
# Soak test of crash recovery: SIGKILLs `arbor run` on a two-level tree (a
# root and four leaves) at random points, one to three times a run,
# resumes until the run ends, and checks that every node completed exactly
# once, the root synthesized once with every leaf's result exactly once,
# and no leaf's work ran twice (TestSoakKillResume in internal/cli).
#
#   bench/soak.sh            # 10 iterations (about 15 s)
#   ITER=100 bench/soak.sh   # longer
#   SEED=123 bench/soak.sh   # replay a failure (the seed is printed)
set -euo pipefail
cd "$(dirname "$0")/.."
args=(-run '^TestSoakKillResume$' -count=1 -v -soak "${ITER:-10}")
if [[ -n "${SEED:-}" ]]; then args+=(-soak-seed "$SEED"); fi
go test ./internal/cli "${args[@]}" | grep -E '^(---|ok|FAIL|PASS)|soak_e2e_test'
