#!/bin/bash
# The first run in a workspace against the hundredth: signed /execute-shell
# of `true` on a fresh workspace each time, on one reused workspace, and
# the raw bwrap launch of the same sandbox (sbx-launch's argv, filter on
# fd 3, the workspace on fd 6, as the workload uid), interleaved in one run
# (goals: fresh <= 1.15x reused, both <= 1.3x raw); the CPU each costs
# (machine-wide busy time over sequential runs: goals fresh <= 1.3x raw,
# reused <= 1.2x raw); then CONC_CLIENTS (16) x CONC_RUNS (200) runs, a
# fresh workspace each, against as many raw launches in 16 loops (>= 0.8).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-40}
CPU_RUNS=${CPU_RUNS:-40}
CONC_CLIENTS=${CONC_CLIENTS:-16} CONC_RUNS=${CONC_RUNS:-200}
. bench/httpd-work.sh first-run
. bench/httpd-start.sh
projects="$work/data/projects"
ws="$projects/reused"
mkdir -p "$ws" && chmod 777 "$ws"

export SBX_DATA_DIR="$work/data"
printf '{"argv":["/usr/bin/bash","--noprofile","--norc","-euo","pipefail","-c","true"],"workspace":"%s"}\n' "$ws" > "$work/spec.json"
sandbox_anchor "$work/spec.json" "$ws"
unset SBX_DATA_DIR
raw() { anchor; }

seq_no=0
# post WS: one signed /execute-shell of `true` in WS; curl's time_total in
# ns lands in $took.
post() {
    seq_no=$((seq_no + 1))
    jq -cn --arg id "r$seq_no" --arg ws "$1" '{agentId: "main", code: "true", executionId: $id, workspaceRoot: $ws,
        permissionEpoch: {sessionId: "bench", mounts: [{source: "workspace", mode: "read-write"}], networkPolicy: "none"}}' > "$work/body"
    local ts sig
    ts=$(date +%s%3N)
    sig=$(printf '%s\n%s' "$ts" "$(sha256sum < "$work/body" | cut -d' ' -f1)" | openssl dgst -sha256 -hmac bench-token -r | cut -d' ' -f1)
    local t
    t=$(curl -sS -o "$work/out" -w '%{time_total}' "$base/execute-shell" -H "authorization: Bearer bench-token" \
        -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" --data-binary @"$work/body")
    [ "$(jq -r .exitCode "$work/out")" = 0 ] || { echo "execution failed: $(cat "$work/out")" >&2; exit 1; }
    took=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1e9 }')
}
# fresh: a new workspace in $d.
fresh() { d="$projects/fresh-$seq_no"; mkdir -p "$d" && chmod 777 "$d"; }
post "$ws"

raw_t=() fresh_t=() reused_t=()
for ((i = 0; i < N; i++)); do
    t0=$(date +%s%N); raw; t1=$(date +%s%N)
    raw_t+=($((t1 - t0)))
    fresh
    post "$d"
    fresh_t+=("$took")
    post "$ws"
    reused_t+=("$took")
done
mr=$(median "${raw_t[@]}") mf=$(median "${fresh_t[@]}") mu=$(median "${reused_t[@]}")
awk -v r="$mr" -v f="$mf" -v u="$mu" -v n="$N" 'BEGIN {
    printf "runs each:                          %d (interleaved)\n", n
    printf "anchor: raw bwrap launch of true:   %.2f ms median (as the workload uid)\n", r / 1e6
    printf "fresh workspace, /execute-shell:    %.2f ms median\n", f / 1e6
    printf "reused workspace, /execute-shell:   %.2f ms median\n", u / 1e6
    printf "ratio fresh / reused:               %.3f (goal <= 1.15)\n", f / u
    printf "ratio fresh / raw:                  %.3f (goal <= 1.3)\n", f / r
    printf "ratio reused / raw:                 %.3f (goal <= 1.3)\n", u / r
}'

# Machine-wide busy CPU (all but idle and iowait) over sequential runs,
# less the client's own CPU (exec-loop.py reports it): the raw anchor runs
# from this shell (its bash loop is in its figure, a slight handicap).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hz=$(getconf CLK_TCK)
# loop_cpu MODE: ms of CPU per run for exec-loop.py in MODE, client excluded.
loop_cpu() {
    local b0 out
    b0=$(busy_ticks)
    out=$(python3 bench/exec-loop.py "$base" bench-token "$projects" "$CPU_RUNS" "$1")
    [ "$(jq .failed <<< "$out")" = 0 ] || { echo "exec-loop $1: $out" >&2; exit 1; }
    awk -v t=$(( $(busy_ticks) - b0 )) -v c="$(jq .clientCpuSeconds <<< "$out")" -v hz="$hz" -v n="$CPU_RUNS" \
        'BEGIN { printf "%.2f", (t / hz - c) * 1000 / n }'
}
b0=$(busy_ticks)
for ((i = 0; i < CPU_RUNS; i++)); do raw; done
c_raw=$(awk -v t=$(( $(busy_ticks) - b0 )) -v hz="$hz" -v n="$CPU_RUNS" 'BEGIN { printf "%.2f", t / hz * 1000 / n }')
c_fresh=$(loop_cpu fresh) c_reused=$(loop_cpu reused) c_health=$(loop_cpu health)
awk -v r="$c_raw" -v f="$c_fresh" -v u="$c_reused" -v h="$c_health" 'BEGIN {
    printf "CPU per run, raw sandbox:           %.1f ms\n", r
    printf "CPU per run, fresh workspace:       %.1f ms (the server side of a GET /health: %.1f ms)\n", f, h
    printf "CPU per run, reused workspace:      %.1f ms\n", u
    printf "ratio CPU fresh / raw:              %.3f (goal <= 1.3)\n", f / r
    printf "ratio CPU reused / raw:             %.3f (goal <= 1.2)\n", u / r
}'

conc=$(python3 bench/http-concurrency.py "$base" bench-token "$projects" "$CONC_CLIENTS" "$CONC_RUNS" fresh)
jq -r '"concurrent clients:                 \(.clients) x \(.runs / .clients) runs, a fresh workspace each",
       "failed / each workspace its run:    \(.failed) / \(.orderHeld)",
       "concurrent throughput (fresh):      \(.perSecond) runs/s (\(.wallSeconds) s)"' <<< "$conc"
[ "$(jq .failed <<< "$conc")" = 0 ] && [ "$(jq .orderHeld <<< "$conc")" = true ]
rate=$(anchor_concurrent "$CONC_CLIENTS" "$CONC_RUNS")
awk -v n=$((CONC_CLIENTS * CONC_RUNS)) -v raw="$rate" -v sbx="$(jq .perSecond <<< "$conc")" 'BEGIN {
    printf "anchor: raw bwrap, as concurrent:   %.1f runs/s (%d launches)\n", raw, n
    printf "ratio concurrent fresh / raw:       %.3f (goal >= 0.8)\n", sbx / raw
}'
