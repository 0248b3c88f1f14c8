#!/bin/bash
# Load: LOAD (default 1000) managed executions across WORKSPACES (50) from
# CLIENTS (16) concurrent signed clients, while rounds of TUNNELS (100)
# concurrent egress CONNECT tunnels echo through a gateway to a loopback
# upstream from inside a sandbox. Asserts nothing is lost and per-workspace
# order holds; prints throughput, p50/p99, tunnel failures and sbx-httpd's
# peak RSS. The anchor: the same executions' sandbox alone (raw bwrap).
set -euo pipefail
cd "$(dirname "$0")/.."
LOAD=${LOAD:-1000} WORKSPACES=${WORKSPACES:-50} CLIENTS=${CLIENTS:-16} TUNNELS=${TUNNELS:-100}
work=$(mktemp -d /tmp/sbx-bench-load.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
chmod 755 "$work"
mkdir "$work/ws" && chmod 777 "$work/ws"

# The egress side: an echo upstream on loopback and a gateway for it.
export SBX_DATA_DIR="$work/launch-data"
cc -O2 -pthread -o "$work/ws/egress-tool" bench/egress-tool.c
mkfifo "$work/ports" "$work/gw-ready"
"$work/ws/egress-tool" serve "$work/ports" & pids+=($!)
read -r _ echo_port < "$work/ports"
printf '{"mode":"domain-allowlist","allowedDomains":["bench.test"],"allowPrivateNetwork":true}\n' > "$work/policy.json"
owner=()
[ "$(id -u)" -ne 0 ] || owner=(--socket-owner 10001)
bin/sbx-egress gateway --socket "$work/gw.sock" --policy "$work/policy.json" "${owner[@]}" --max-tunnels 1100 --peer-max-connections 1100 \
    --resolve "bench.test:$echo_port:127.0.0.1" --ready-fd 3 3>"$work/gw-ready" & pids+=($!)
read -r _ < "$work/gw-ready"
jq -cn --arg ws "$work/ws" --arg s "$work/gw.sock" --arg n "$TUNNELS" --arg t "bench.test:$echo_port" \
    '{argv: ["/workspace/egress-tool", "tunnels", "127.0.0.1", "18118", $n, $t], workspace: $ws,
      network: {mode: "domain-allowlist", socket: $s}}' > "$work/tunnels.json"

# sbx-httpd, the managed load, and tunnel rounds until the load is done.
export SCIENTIFIC_ENVS=0
. bench/httpd-start.sh
pids+=("$pid")
httpd=$pid
: > "$work/tunnel-failures"
(
    while [ ! -e "$work/load-done" ]; do
        bin/sbx-launch "$work/tunnels.json" >> "$work/tunnel-failures" 2>/dev/null || echo "$TUNNELS" >> "$work/tunnel-failures"
    done
) & tunneler=$!
load=$(python3 bench/http-load.py "$base" bench-token "$work/data/projects" "$LOAD" "$WORKSPACES" "$CLIENTS")
touch "$work/load-done"
wait "$tunneler"
rss=$(awk '/VmHWM/ {print $2}' "/proc/$httpd/status")
# Run directories go once delivered (retention 0): none may stay behind.
# The last ones go just after their terminal record is durable: up to 10 s.
# Not counted: the lease locks and the directories waiting standbys made.
for _ in $(seq 100); do
    left=$(find "$work/data/runner-executions/runs" -mindepth 1 -maxdepth 1 -type d ! -name locks ! -name '.standby-*' | wc -l)
    [ "$left" = 0 ] && break
    sleep 0.1
done
rounds=$(wc -l < "$work/tunnel-failures")
failed=$(awk '{ s += $1 } END { print s + 0 }' "$work/tunnel-failures")
jq -r --arg rss "$rss" --arg left "$left" --arg rounds "$rounds" --arg failed "$failed" --arg t "$TUNNELS" \
    --arg ws "$WORKSPACES" --arg c "$CLIENTS" '
    "managed load:                       \(.executions) executions, \($ws) workspaces, \($c) clients",
    "lost / failed:                      \(.lost) / \(.failures | length)",
    "per-workspace order held:           \(.orderHeld)",
    "throughput:                         \(.perSecond) executions/s (\(.wallSeconds) s)",
    "submit -> terminal record:          p50 \(.p50Ms) ms, p99 \(.p99Ms) ms",
    "egress alongside:                   \($rounds) rounds of \($t) concurrent tunnels, \($failed) failed",
    "run directories left:               \($left) (retention 0)",
    "sbx-httpd peak RSS (VmHWM):         \(($rss | tonumber) / 1024 | . * 10 | round / 10) MiB"' <<< "$load"
[ "$(jq .orderHeld <<< "$load")" = true ] || jq -c '.orderViolations' <<< "$load"
[ "$(jq .lost <<< "$load")" = 0 ] && [ "$(jq .orderHeld <<< "$load")" = true ] && [ "$failed" = 0 ] && [ "$left" = 0 ]
