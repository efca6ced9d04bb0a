#!/usr/bin/env bash
# Runs arbor's tests on a fresh Debian machine: installs what they need
# when it is missing, then `go test "$@" ./...` (so `bash scripts/test.sh`
# is `go test ./...`, and flags pass through: `bash scripts/test.sh -race
# -count=1`). Developers who already have the parts can run `go test ./...`
# directly; a test whose part is missing fails naming this script.
#
# What the tests need beyond Go:
#   bash, git      the shell tool and the workspace tests
#   node, npm      the Claude Agent SDK end-to-end tests and the browser
#                  test install their pinned npm packages on first run
#   chromium       internal/web's browser test drives the pages in it
#   initdb         PostgreSQL's server binaries: the postgres store's tests
#                  start a throwaway server (internal/store/postgres/pgtest)
#   bwrap          bubblewrap: the sandbox's tests confine commands for real
#   curl           the sandbox's network tests fetch through its proxy
#   socat          the relay into a confined call's network namespace
# Missing ones are installed with apt-get as root; otherwise the script
# names the packages to install and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
need() { # need PACKAGE... : add the packages to the install list
  missing+=("$@")
}
command -v bash >/dev/null || need bash
command -v git >/dev/null || need git
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  need nodejs npm
fi
if ! command -v chromium >/dev/null && [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM:-}" ]; then
  need chromium
fi
# Debian's postgresql package keeps initdb off PATH, in
# /usr/lib/postgresql/<version>/bin, where pgtest looks for it.
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
  && [ -z "${ARBOR_TEST_POSTGRES:-}" ]; then
  need postgresql
fi
command -v bwrap >/dev/null || need bubblewrap
command -v curl >/dev/null || need curl
command -v socat >/dev/null || need socat

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "scripts/test.sh: the tests need these packages, which are missing:" >&2
    echo "  ${missing[*]}" >&2
    echo "install them as root (sudo apt-get install ${missing[*]}), then run this again" >&2
    exit 1
  fi
  echo "scripts/test.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# Playwright, which drives the browser test, needs Node.js 20 or later;
# Debian 12's own nodejs is 18.
if ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)'; then
  echo "scripts/test.sh: Node.js $(node --version) is too old: the tests need 20 or later (nodesource.com has packages)" >&2
  exit 1
fi

go test "$@" ./...
