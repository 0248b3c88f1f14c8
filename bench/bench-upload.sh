#!/bin/bash
# A streamed verified upload (PUT /remote-workspace/transfer-file) of
# SIZE_MIB (default 4096) against `cp` of the same file on the same disk,
# in one run; sbx-httpd's peak RSS (VmHWM) after the upload (goal: < 64 MiB,
# the body never sits in memory).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-4096}
. bench/httpd-work.sh upload
export SCIENCE_AGENT_MAX_WORKSPACE_BYTES=0 SCIENTIFIC_ENVS=0
. bench/httpd-start.sh

head -c $((SIZE_MIB << 20)) /dev/urandom > "$work/src.bin"
sha=$(sha256sum < "$work/src.bin" | cut -d' ' -f1)
rss_before=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
ms() { local s; s=$(date +%s%N); "$@"; echo $(( ($(date +%s%N) - s) / 1000000 )); }

# Interleaved, best of 3 each: the anchor is a plain cp on the same disk.
best_cp=999999999 best_up=999999999
for i in 1 2 3; do
    t=$(ms cp "$work/src.bin" "$work/copy.bin"); rm -f "$work/copy.bin"
    [ "$t" -lt "$best_cp" ] && best_cp=$t
    s=$(date +%s%N)
    code=$(curl -sS -o "$work/reply" -w '%{http_code}' -T "$work/src.bin" -X PUT \
        -H "authorization: Bearer bench-token" -H "x-workspace-size: $((SIZE_MIB << 20))" \
        -H "x-workspace-sha256: $sha" -H "expect:" \
        "$base/remote-workspace/transfer-file?workspace=bench&path=up-$i.bin")
    t=$(( ($(date +%s%N) - s) / 1000000 ))
    [ "$code" = 201 ] || { echo "upload failed: $code $(cat "$work/reply")"; exit 1; }
    rm -f "$work/data/remote-workspaces/bench/up-$i.bin"
    [ "$t" -lt "$best_up" ] && best_up=$t
done
rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
awk -v n="$SIZE_MIB" -v c="$best_cp" -v u="$best_up" -v r0="$rss_before" -v r="$rss" 'BEGIN {
    printf "file:                                 %d MiB, best of 3\n", n
    printf "anchor: cp on the same disk:          %.0f MiB/s (%d ms)\n", n * 1000 / c, c
    printf "verified streamed upload (hashed):    %.0f MiB/s (%d ms)\n", n * 1000 / u, u
    printf "throughput ratio upload/cp:           %.3f\n", c / u
    printf "sbx-httpd peak RSS (VmHWM):           %.1f MiB (%.1f MiB before; goal < 64)\n", r / 1024, r0 / 1024
}'
