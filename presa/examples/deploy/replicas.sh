#!/usr/bin/env bash
# Three replicas of presa/examples/replicated_tasks.rs on 127.0.0.1:3001-3003, sharing the
# PostgreSQL database at PRESA_DATABASE_URL and one request-state key, behind HAProxy on
# 127.0.0.1:3000 (haproxy.cfg beside this script). Ctrl-C stops them all.
#
#   export PRESA_DATABASE_URL=postgres://presa:secret@127.0.0.1:5432/presa
#   presa/examples/deploy/replicas.sh
#
# Needs cargo, haproxy, and a PostgreSQL the URL reaches.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${PRESA_DATABASE_URL:?set PRESA_DATABASE_URL to a PostgreSQL URL}"
# One key for every replica, so a round of a call may land on any of them.
export PRESA_STATE_KEYS="${PRESA_STATE_KEYS:-k1:$(head -c 32 /dev/urandom | base64)}"

cargo build --release -p presa --features postgres --example replicated_tasks
ROOT="$(cd "$HERE/../../.." && pwd)"
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/replicated_tasks"

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
for port in 3001 3002 3003; do
  "$BIN" "127.0.0.1:$port" &
  pids+=("$!")
done
haproxy -f "$HERE/haproxy.cfg" -db &
pids+=("$!")
echo "serving on http://127.0.0.1:3000/mcp" >&2
wait
