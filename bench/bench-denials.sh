#!/bin/bash
# The price of explaining refusals: a workload calling a refused syscall
# (ptrace) 1,000,000 times, in the same sandbox as the same uid, with
# seccomp denial reporting (the default) against --no-seccomp-reports,
# where the kernel refuses alone (plain EPERM). Also the supervisor's CPU
# time and peak RSS, which must not grow with the count.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLS=${CALLS:-1000000}
ROUNDS=${ROUNDS:-5}
. bench/lib.sh
work=$(mktemp -d /tmp/sbx-bench-denials.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
export SBX_DATA_DIR="$work/data"
cc -O2 -static -o "$work/hammer" test/fixtures/hammer.c
# run MODE CALLS: prints "wall_ns user_s sys_s maxrss_kib" of one sbx-run
run() {
    local ws opts=() t0 t1
    ws=$(mktemp -d "$work/ws.XXXXXX")
    chmod 777 "$ws"
    cp "$work/hammer" "$ws/"
    [ "$1" = reported ] || opts=(--no-seccomp-reports)
    jq -cn --arg ws "$ws" --arg n "$2" '{executionId: ("h" + ($n)), language: "shell", code: ("./hammer " + $n), workspace: $ws}' > "$ws.req"
    t0=$(date +%s%N)
    /usr/bin/time -f '%U %S %M' -o "$ws.time" bin/sbx-run --state-dir "$ws.state" --no-snapshot "${opts[@]}" "$ws.req" > "$ws.events"
    t1=$(date +%s%N)
    jq -e 'select(.event == "finished") | .result.exitCode == 0' "$ws.events" > /dev/null || { echo "run failed: $(tail -1 "$ws.events")"; exit 1; }
    echo "$((t1 - t0)) $(cat "$ws.time") $(jq -r 'select(.event == "finished") | .result | "\(.stdout | rtrimstr("\n")) | \(.seccompReporting.answered) answered, ptrace count \([.denials[] | select(.what == "ptrace") | .count][0] // 0)"' "$ws.events")"
    rm -rf "$ws" "$ws.state"
}
for mode in plain reported; do
    walls=()
    for ((i = 0; i < ROUNDS; i++)); do
        line=$(run "$mode" "$CALLS")
        walls+=("${line%% *}")
        last=$line
    done
    read -r _ user sys rss rest <<< "$last"
    eval "${mode}_wall=$(median "${walls[@]}")"
    echo "$mode: run p50 $(( $(median "${walls[@]}") / 1000000 )) ms; supervisor user ${user}s sys ${sys}s, peak RSS ${rss} KiB; $rest"
done
# The supervisor's own cost must not follow the count: 10x fewer calls.
small=$(run reported $((CALLS / 10)))
read -r _ user sys rss _ <<< "$small"
echo "reported, $((CALLS / 10)) calls: supervisor user ${user}s sys ${sys}s, peak RSS ${rss} KiB"
echo "ratio reported/plain ($CALLS refused calls, whole run): $(awk -v a="$reported_wall" -v b="$plain_wall" 'BEGIN { printf "%.2f", a / b }')"
