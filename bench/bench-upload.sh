#!/bin/bash
# A streamed verified upload (PUT /remote-workspace/transfer-file) of
# SIZE_MIB (default 4096) against `cp` of the same file on the same disk and
# against hashing it (sha256sum, and openssl's SHA-256, the one sbx-httpd
# uses), in one run; sbx-httpd's peak RSS (VmHWM) after the uploads (goal:
# < 64 MiB, the body never sits in memory).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-4096}
. bench/httpd-work.sh upload
export SCIENCE_AGENT_MAX_WORKSPACE_BYTES=0 SCIENTIFIC_ENVS=0
. bench/httpd-start.sh

head -c $((SIZE_MIB << 20)) /dev/urandom > "$work/src.bin"
sha=$(openssl dgst -sha256 -r "$work/src.bin" | cut -d' ' -f1)
rss_before=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
ms() { local s; s=$(date +%s%N); "$@" > /dev/null; echo $(( ($(date +%s%N) - s) / 1000000 )); }
keep_best() { local -n best=$1; [ "$2" -ge "$best" ] || best=$2; }
upload() {
    curl -sS -o "$work/reply" -w '%{http_code}' -T "$work/src.bin" -X PUT \
        -H "authorization: Bearer bench-token" -H "x-workspace-size: $((SIZE_MIB << 20))" \
        -H "x-workspace-sha256: $sha" -H "expect:" \
        "$base/remote-workspace/transfer-file?workspace=bench&path=up-$1.bin" > "$work/code"
}

# Interleaved, best of 3 each: the anchors are a plain cp on the same disk
# and SHA-256 of the same file, the floor of a hashed stream.
best_cp=999999999 best_sum=999999999 best_ssl=999999999 best_up=999999999
for i in 1 2 3; do
    t=$(ms cp "$work/src.bin" "$work/copy.bin"); rm -f "$work/copy.bin"
    keep_best best_cp "$t"
    keep_best best_sum "$(ms sha256sum "$work/src.bin")"
    keep_best best_ssl "$(ms openssl dgst -sha256 "$work/src.bin")"
    t=$(ms upload "$i")
    [ "$(cat "$work/code")" = 201 ] || { echo "upload failed: $(cat "$work/code") $(cat "$work/reply")"; exit 1; }
    rm -f "$work/data/remote-workspaces/bench/up-$i.bin"
    keep_best best_up "$t"
done
rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
awk -v n="$SIZE_MIB" -v c="$best_cp" -v h="$best_sum" -v o="$best_ssl" -v u="$best_up" -v r0="$rss_before" -v r="$rss" 'BEGIN {
    printf "file:                                 %d MiB, best of 3\n", n
    printf "anchor: cp on the same disk:          %.0f MiB/s (%d ms)\n", n * 1000 / c, c
    printf "anchor: sha256sum of the file:        %.0f MiB/s (%d ms)\n", n * 1000 / h, h
    printf "anchor: openssl dgst -sha256:         %.0f MiB/s (%d ms)\n", n * 1000 / o, o
    printf "verified streamed upload (hashed):    %.0f MiB/s (%d ms)\n", n * 1000 / u, u
    printf "throughput ratio upload/cp:           %.3f\n", c / u
    printf "throughput ratio upload/sha256sum:    %.3f\n", h / u
    printf "throughput ratio upload/openssl:      %.3f\n", o / u
    printf "sbx-httpd peak RSS (VmHWM):           %.1f MiB (%.1f MiB before; goal < 64)\n", r / 1024, r0 / 1024
}'
