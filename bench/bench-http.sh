#!/bin/bash
# sbx-httpd end to end: a signed /execute-shell of `true` against the raw
# bwrap launch of the same sandbox (sbx-launch's argv, filter on fd 3, as
# the workload uid: through setpriv when root), in one interleaved run
# (goal: at most 1.3x); then 200 managed executions
# across 20 workspaces from 8 concurrent clients (none lost, per-workspace
# order held, throughput, p50/p99 from submission to terminal record); then
# CONC_CLIENTS (16) clients x CONC_RUNS (200) synchronous executions, each
# client on a workspace of its own (goal: 180 runs/s, none failed), against
# the same number of raw sandbox launches run as concurrently.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-50}
LOAD=${LOAD:-200}
CONC_CLIENTS=${CONC_CLIENTS:-16} CONC_RUNS=${CONC_RUNS:-200}
. bench/httpd-work.sh http
. bench/httpd-start.sh
ws="$work/data/projects/p"
mkdir -p "$ws" && chmod 777 "$ws"

# The anchor: the very sandbox sbx-launch builds, run by bwrap directly.
export SBX_DATA_DIR="$work/data"
printf '{"argv":["/usr/bin/bash","--noprofile","--norc","-euo","pipefail","-c","true"],"workspace":"%s"}\n' "$ws" > "$work/spec.json"
sandbox_anchor "$work/spec.json" "$ws"
unset SBX_DATA_DIR

request() {
    jq -cn --arg id "$1" --arg ws "$ws" '{agentId: "main", code: "true", executionId: $id, workspaceRoot: $ws,
        permissionEpoch: {sessionId: "bench", mounts: [{source: "workspace", mode: "read-write"}], networkPolicy: "none"}}' > "$work/body"
    ts=$(date +%s%3N)
    sig=$(printf '%s\n%s' "$ts" "$(sha256sum < "$work/body" | cut -d' ' -f1)" | openssl dgst -sha256 -hmac bench-token -r | cut -d' ' -f1)
}
request warm; curl -sS -o /dev/null "$base/execute-shell" -H "authorization: Bearer bench-token" \
    -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" --data-binary @"$work/body"

direct=() http=()
for ((i = 0; i < N; i++)); do
    t0=$(date +%s%N); anchor; t1=$(date +%s%N)
    direct+=($((t1 - t0)))
    request "b$i"
    t=$(curl -sS -o "$work/out" -w '%{time_total}' "$base/execute-shell" -H "authorization: Bearer bench-token" \
        -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" --data-binary @"$work/body")
    [ "$(jq -r .exitCode "$work/out")" = 0 ] || { echo "execution failed: $(cat "$work/out")" >&2; exit 1; }
    http+=("$(awk -v t="$t" 'BEGIN { printf "%d", t * 1e9 }')")
done
md=$(median "${direct[@]}") mh=$(median "${http[@]}")
awk -v d="$md" -v h="$mh" -v n="$N" 'BEGIN {
    printf "runs each:                          %d (interleaved)\n", n
    printf "anchor: raw bwrap launch of true:   %.2f ms median (as the workload uid)\n", d / 1e6
    printf "signed POST /execute-shell of true: %.2f ms median (curl time_total)\n", h / 1e6
    printf "ratio:                              %.3f (goal <= 1.3)\n", h / d
}'
load=$(python3 bench/http-load.py "$base" bench-token "$work/data/projects" "$LOAD" 20 8)
jq -r '"managed load:                       \(.executions) executions, 20 workspaces, 8 clients",
       "lost / failed:                      \(.lost) / \(.failures | length)",
       "per-workspace order held:           \(.orderHeld)",
       "throughput:                         \(.perSecond) executions/s (\(.wallSeconds) s)",
       "submit -> terminal record:          p50 \(.p50Ms) ms, p99 \(.p99Ms) ms"' <<< "$load"
[ "$(jq .lost <<< "$load")" = 0 ] && [ "$(jq .orderHeld <<< "$load")" = true ]
conc=$(python3 bench/http-concurrency.py "$base" bench-token "$work/data/projects" "$CONC_CLIENTS" "$CONC_RUNS")
jq -r '"concurrent clients:                 \(.clients) x \(.runs / .clients) synchronous runs, a workspace each",
       "failed / order held:                \(.failed) / \(.orderHeld)",
       "concurrent throughput:              \(.perSecond) runs/s (\(.wallSeconds) s; goal >= 180)"' <<< "$conc"
[ "$(jq .failed <<< "$conc")" = 0 ] && [ "$(jq .orderHeld <<< "$conc")" = true ]

# The concurrent anchor: CONC_CLIENTS loops, each launching the raw sandbox
# of `true` CONC_RUNS times one after another, as many at once as clients.
rate=$(anchor_concurrent "$CONC_CLIENTS" "$CONC_RUNS")
awk -v n=$((CONC_CLIENTS * CONC_RUNS)) -v raw="$rate" -v sbx="$(jq .perSecond <<< "$conc")" 'BEGIN {
    printf "anchor: raw bwrap, as concurrent:   %.1f runs/s (%d launches)\n", raw, n
    printf "concurrent ratio:                   %.3f of the raw sandbox\n", sbx / raw
}'
