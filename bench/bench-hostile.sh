#!/bin/bash
# Hostile clients: IDLE (2000) silent connections and SLOW (200) bodies
# trickled a byte at a time, all on loopback, while GET /health and a signed
# /execute-shell of `true` keep being asked (ROUNDS each). The anchor is the
# same requests in the same run with nothing else open; prints both medians,
# their ratio, failures (must be 0) and sbx-httpd's peak RSS (goal < 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
IDLE=${IDLE:-2000} SLOW=${SLOW:-200} ROUNDS=${ROUNDS:-20}
. bench/httpd-work.sh hostile
export SCIENTIFIC_ENVS=0
. bench/httpd-start.sh
ws="$work/data/projects/p"
mkdir -p "$ws" && chmod 777 "$ws"
out=$(timeout 300 python3 bench/hostile-clients.py "$base" bench-token "$ws" "$IDLE" "$SLOW" "$ROUNDS")
rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
threads=$(awk '/Threads/ {print $2}' "/proc/$pid/status")
jq -r --arg rss "$rss" --arg threads "$threads" '
    "hostile connections held:           \(.idle) idle + \(.slow) slow-body (\(.stillOpen) still open at the end)",
    "anchor: GET /health, nothing open:  \(.quiet.healthMs) ms median",
    "GET /health under the load:         \(.loaded.healthMs) ms median",
    "health ratio (loaded / quiet):      \(.loaded.healthMs / .quiet.healthMs * 100 | round / 100)",
    "signed execute-shell true:          \(.quiet.executeMs) ms quiet, \(.loaded.executeMs) ms loaded",
    "execute ratio (loaded / quiet):     \(.loaded.executeMs / .quiet.executeMs * 100 | round / 100)",
    "failed requests (quiet / loaded):   \(.quiet.failed) / \(.loaded.failed)",
    "sbx-httpd threads at the end:       \($threads)",
    "sbx-httpd peak RSS (VmHWM):         \(($rss | tonumber) / 1024 | . * 10 | round / 10) MiB (goal < 64)"' <<< "$out"
[ "$(jq '.quiet.failed + .loaded.failed' <<< "$out")" = 0 ] && [ "$rss" -lt 65536 ]
