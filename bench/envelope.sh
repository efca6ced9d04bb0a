#!/usr/bin/env bash
# Measures `arbor headless` (the envelope protocol, spec 000) against the
# scripted instant model (--model script:FILE): the time from process start
# to the ready line (median of STARTS fresh processes, default 20), send→idle
# over TURNS turns in one process (default 20; median and p90) with the CPU
# those turns used (all threads), and VmRSS /
# VmHWM after RSS_TURNS turns (default 100), right after the last turn and
# again after the session has been idle for two seconds (-settle). Every
# process gets a fresh HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and workspace
# in a temp dir, so the user's files are untouched. The driver is bench/envelope (Go: pipes and
# time.Now are more precise than bash). Runnable from any directory.
# TAGS=lean,sqlite_cgo builds arbor and the floor with those build tags;
# CGO_ENABLED=0 TAGS=lean builds the static lean binary a gateway would
# (docs/headless-envelope.md, "A lean build").
#
# Side by side with Chord: CHORD_BIN=/path/to/chord bench/envelope.sh runs
# arbor and that binary (`chord headless`, given a config.yaml that points
# it at the server) against one scripted model server, alternating ROUNDS
# (default 3) sessions of TURNS turns each and then STARTS (default 20)
# starts each (fresh state dirs, then one existing state dir per program,
# as a gateway's later sessions find it), and prints both programs' ready
# (both ways), send→idle median, CPU per turn, VmRSS
# and RssAnon after TURNS turns and binary size, with the ratios
# arbor/Chord. The script never builds Chord. Without CHORD_BIN it prints
# arbor's own figures and says Chord was not given.
#
# Every mode also times bench/floor, the least a process of arbor's stack
# (the Go runtime, the same SQLite driver and Anthropic SDK) starts in:
# its ready and private memory at ready, and with CHORD_BIN its ready as
# a fraction of Chord's.
#
# OTHER="CMD ARGS" compares with any other envelope-protocol command the
# same way (without Chord's config); OTHER=self compares arbor with itself
# (a check of the method: the ratios should be about 1).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -tags "${TAGS:-}" -o "$tmp/arbor" ./cmd/arbor
go build -o "$tmp/envelope-bench" ./bench/envelope
go build -tags "${TAGS:-}" -o "$tmp/floor" ./bench/floor

if [ -n "${CHORD_BIN:-}" ]; then
	# A copy, so that both binaries were just written and their pages sit
	# in the page cache alike: a file read back from disk is cached in
	# large folios, and a process that touches one byte of a folio maps
	# all of it, so VmRSS depends on how the file came into the cache.
	cp "$CHORD_BIN" "$tmp/chord"
	exec "$tmp/envelope-bench" -arbor "$tmp/arbor" -dir "$tmp" -chord "$tmp/chord" -floor "$tmp/floor" \
		-turns "${TURNS:-20}" -rounds "${ROUNDS:-3}" -starts "${STARTS:-20}"
fi
if [ -n "${OTHER:-}" ]; then
	other="$OTHER"
	[ "$other" = self ] && other="$tmp/arbor headless --model anthropic/claude-sonnet-4-5"
	exec "$tmp/envelope-bench" -arbor "$tmp/arbor" -dir "$tmp" -other "$other" -floor "$tmp/floor" \
		-turns "${TURNS:-20}" -rounds "${ROUNDS:-3}" -starts "${STARTS:-20}"
fi
echo "Chord was not given (CHORD_BIN=/path/to/chord compares with it); arbor's own figures:"
echo "arbor binary: $(($(stat -c %s "$tmp/arbor") / 1048576)) MiB"
"$tmp/envelope-bench" -arbor "$tmp/arbor" -dir "$tmp" -floor "$tmp/floor" \
	-starts "${STARTS:-20}" -turns "${TURNS:-20}" -rss-turns "${RSS_TURNS:-100}"
