#!/usr/bin/env bash
# The sandbox escape suite, side by side: each attempt runs once under
# Claude Code's sandbox runtime (`srt`, npm @anthropic-ai/sandbox-runtime)
# and once under arbor's (`arbor sandbox`), with the same policy: writes
# only in the workspace, ~/.ssh and arbor's config unreadable, the network
# closed but for one loopback server. Prints a markdown table: "blocked"
# where the attempt failed, "ESCAPED" where it got through, "works" /
# "BROKEN" for what must stay allowed.
#
#   bash bench/sandbox-escapes.sh
#
# Needs bubblewrap, socat, ripgrep (srt's own needs on Linux), curl,
# python3, node and npm; installs the missing Debian packages as root and
# srt from npm into ~/.cache/arbor-bench. Loopback only. Not run by CI (the
# same attempts run as Go tests in internal/tool/sandbox).
set -euo pipefail
cd "$(dirname "$0")/.."

SRT_VERSION=0.0.83
missing=()
for p in bwrap:bubblewrap socat:socat rg:ripgrep curl:curl python3:python3 npm:npm; do
  command -v "${p%%:*}" >/dev/null || missing+=("${p#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "install ${missing[*]} first" >&2; exit 1; }
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
cache=${XDG_CACHE_HOME:-$HOME/.cache}/arbor-bench/srt-$SRT_VERSION
if [ ! -x "$cache/node_modules/.bin/srt" ]; then
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-audit --no-fund --silent "@anthropic-ai/sandbox-runtime@$SRT_VERSION" >/dev/null
fi
srt=$cache/node_modules/.bin/srt

# Not under /tmp: both sandboxes give a command a /tmp of its own.
root=$(mktemp -d /var/tmp/arbor-escapes.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pkill -f "sleep 8765[0-9]" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
go build -o "$root/arbor" ./cmd/arbor

home=$root/home ws=$root/ws out=$root/outside
mkdir -p "$home/.ssh" "$home/.config/arbor" "$ws" "$out" "$root/www-allowed" "$root/www-denied"
echo "PLANTED-KEY" >"$home/.ssh/id_rsa"
echo "api_key: PLANTED-CONFIG" >"$home/.config/arbor/config.yaml.bak"
ln -s "$out" "$ws/link"
echo "ALLOWED-PAGE" >"$root/www-allowed/index.html"
echo "DENIED-PAGE" >"$root/www-denied/index.html"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pa=$(port) pd=$(port)
python3 -m http.server --bind 127.0.0.1 "$pa" --directory "$root/www-allowed" >/dev/null 2>&1 & pids+=($!)
python3 -m http.server --bind 127.0.0.1 "$pd" --directory "$root/www-denied" >/dev/null 2>&1 & pids+=($!)
for p in "$pa" "$pd"; do
  for _ in $(seq 50); do curl -s "http://127.0.0.1:$p/" >/dev/null && break; sleep 0.1; done
done

# One policy, in each tool's words. srt's allow-list names hosts, not
# ports: the allowed server is "localhost", the denied one 127.0.0.1.
cat >"$home/.srt-settings.json" <<EOF
{"filesystem": {"denyRead": ["$home/.ssh", "$home/.config/arbor"], "allowWrite": ["$ws"], "denyWrite": []},
 "network": {"allowedDomains": ["localhost"], "deniedDomains": []}}
EOF
cat >"$home/.config/arbor/config.yaml" <<EOF
sandbox:
  network:
    allow: ["localhost:$pa"]
EOF

run_srt() { (cd "$ws" && HOME=$home timeout 60 "$srt" --settings "$home/.srt-settings.json" bash -c "$1") 2>&1 || true; }
run_arbor() { (cd "$ws" && HOME=$home XDG_CONFIG_HOME=$home/.config timeout 60 "$root/arbor" sandbox -- "$1") 2>&1 || true; }

# attempt NAME KIND CHECK COMMAND: KIND is escape (must fail) or allowed
# (must work); CHECK is "file:PATH" (an escape if it exists afterwards),
# "out:TEXT" (an escape, or for allowed a success, if the output has it)
# or "proc:MARKER" (an escape if `sleep MARKER` is alive afterwards).
rows=()
attempt() {
  local name=$1 kind=$2 check=$3 cmd=$4 cells=""
  for tool in srt arbor; do
    rm -f "$out"/* 2>/dev/null || true
    local o got=no
    o=$(run_$tool "$cmd")
    case $check in
      file:*) [ -e "${check#file:}" ] && got=yes ;;
      out:*) grep -q "${check#out:}" <<<"$o" && got=yes ;;
      proc:*) sleep 0.3; pgrep -f "sleep ${check#proc:}" >/dev/null && got=yes ;;
    esac
    pkill -f "sleep 8765[0-9]" 2>/dev/null || true
    if [ "$kind" = escape ]; then
      [ $got = yes ] && cells+=" ESCAPED |" || cells+=" blocked |"
    else
      [ $got = yes ] && cells+=" works |" || cells+=" BROKEN |"
    fi
  done
  rows+=("| $name |$cells")
}

attempt "write by absolute path" escape "file:$out/abs" "echo x > $out/abs"
attempt "write through ../" escape "file:$out/dotdot" "echo x > ../outside/dotdot"
attempt "write through a planted symlink" escape "file:$out/link" "echo x > link/link"
attempt "write through /proc/self/root" escape "file:$out/proc" "echo x > /proc/self/root$out/proc"
attempt "read ~/.ssh/id_rsa" escape "out:PLANTED-KEY" "cat $home/.ssh/id_rsa"
attempt "read arbor's config" escape "out:PLANTED-CONFIG" "cat $home/.config/arbor/*"
attempt "fetch the denied loopback server (proxy)" escape "out:DENIED-PAGE" "curl -sS --max-time 10 http://127.0.0.1:$pd/"
attempt "connect to it directly (no proxy)" escape "out:DENIED-PAGE" "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:$pd/"
attempt "resolve an arbitrary host name" escape "out:has address" "getent hosts example.com && echo has address"
attempt "setsid nohup … & outlives the call" escape "proc:87651" "setsid nohup sleep 87651 >/dev/null 2>&1 & disown; true"
attempt "write in the workspace" allowed "file:$ws/made" "echo x > made"
attempt "fetch the allowed loopback server" allowed "out:ALLOWED-PAGE" "curl -sS --max-time 10 http://localhost:$pa/"

# The runner killed with SIGKILL during a call: is the call's process gone?
killed_row="| runner killed with SIGKILL during a call |"
for tool in srt arbor; do
  if [ $tool = srt ]; then
    (cd "$ws" && HOME=$home exec "$srt" --settings "$home/.srt-settings.json" bash -c "sleep 87652") >/dev/null 2>&1 &
  else
    (cd "$ws" && HOME=$home XDG_CONFIG_HOME=$home/.config exec "$root/arbor" sandbox -- "sleep 87652") >/dev/null 2>&1 &
  fi
  runner=$!
  for _ in $(seq 100); do pgrep -f "sleep 87652" >/dev/null && break; sleep 0.05; done
  { kill -9 "$runner"; wait "$runner"; } 2>/dev/null || true
  sleep 0.5
  if pgrep -f "sleep 87652" >/dev/null; then killed_row+=" ESCAPED (left running) |"; else killed_row+=" blocked |"; fi
  pkill -f "sleep 87652" 2>/dev/null || true
done
rows+=("$killed_row")
rows+=("| fork bomb | not run (no process limit: it would take the machine) | ended by the process-count watchdog (TestProcesses/fork-bomb) |")

echo "| attempt | srt $SRT_VERSION | arbor |"
echo "|---|---|---|"
printf '%s\n' "${rows[@]}"
