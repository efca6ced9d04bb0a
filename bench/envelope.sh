#!/usr/bin/env bash
# Measures `arbor headless` (the envelope protocol, spec 000) against the
# scripted instant model (--model script:FILE): the time from process start
# to the ready line (median of STARTS fresh processes, default 20), send→idle
# over TURNS turns in one process (default 20; median and p90), and VmRSS /
# VmHWM after RSS_TURNS turns (default 100). Every process gets a fresh
# HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and workspace in a temp dir, so the
# user's files are untouched. The driver is bench/envelope (Go: pipes and
# time.Now are more precise than bash). Runnable from any directory.
#
# Side by side: OTHER="chord headless" bench/envelope.sh runs arbor and that
# command against one scripted model server, alternating ROUNDS (default 3)
# sessions of TURNS turns each, and prints both send→idle medians and their
# ratio. OTHER=self compares arbor with itself (a check of the method: the
# ratio should be about 1).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/arbor" ./cmd/arbor
go build -o "$tmp/envelope-bench" ./bench/envelope

if [ -n "${OTHER:-}" ]; then
	other="$OTHER"
	[ "$other" = self ] && other="$tmp/arbor headless --model anthropic/claude-sonnet-4-5"
	exec "$tmp/envelope-bench" -arbor "$tmp/arbor" -dir "$tmp" -other "$other" \
		-turns "${TURNS:-20}" -rounds "${ROUNDS:-3}"
fi
echo "arbor binary: $(($(stat -c %s "$tmp/arbor") / 1048576)) MiB"
"$tmp/envelope-bench" -arbor "$tmp/arbor" -dir "$tmp" \
	-starts "${STARTS:-20}" -turns "${TURNS:-20}" -rss-turns "${RSS_TURNS:-100}"
