#!/bin/bash
# Outputs by reference: 100 MB of ASCII stdout through a signed
# /execute-shell with the default 1 GiB budget, against the same workload
# run directly into a file (the anchor, same run); every byte checked,
# sbx-httpd's and sbx-run's peak RSS printed (goal: each below 32 MiB);
# then 1 GiB: valid JSON, complete, the same memory bound.
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${MB:-100}
. bench/httpd-work.sh output
export SCIENCE_AGENT_RUN_RETENTION_SECONDS=3600 # keeps result.json: sbx-run's own peak RSS is in it
. bench/httpd-start.sh
ws="$work/data/projects/p"
mkdir -p "$ws" && chmod 777 "$ws"

# post ID CODE: the signed /execute-shell; the body in $work/out, curl's time in $t.
post() {
    jq -cn --arg id "$1" --arg code "$2" --arg ws "$ws" '{agentId: "main", code: $code, executionId: $id, workspaceRoot: $ws,
        permissionEpoch: {sessionId: "bench", mounts: [{source: "workspace", mode: "read-write"}], networkPolicy: "none"}}' > "$work/body"
    local ts sig
    ts=$(date +%s%3N)
    sig=$(printf '%s\n%s' "$ts" "$(sha256sum < "$work/body" | cut -d' ' -f1)" | openssl dgst -sha256 -hmac bench-token -r | cut -d' ' -f1)
    t=$(curl -sS -o "$work/out" -w '%{http_code} %{time_total}' "$base/execute-shell" -H "authorization: Bearer bench-token" \
        -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" --data-binary @"$work/body")
    [ "${t%% *}" = 200 ] || { echo "HTTP ${t%% *}: $(head -c 300 "$work/out")" >&2; exit 1; }
    t=${t#* }
}
supervisor_kib() { jq -s 'map(.supervisorMaxRssKiB) | max' "$work"/data/runner-executions/runs/*/result.json; }
hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$pid/status"; }

code="head -c $((MB * 1000000)) /dev/zero | tr '\\0' a"
t0=$(date +%s%N)
bash -c "$code" > "$work/direct"
t1=$(date +%s%N)
want=$(sha256sum < "$work/direct" | cut -d' ' -f1)
rm -f "$work/direct"
post o1 "$code"
got=$(jq -j .stdout "$work/out" | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "stdout differs: $got, want $want" >&2; exit 1; }
awk -v a="$(( (t1 - t0) / 1000 ))" -v h="$t" -v mb="$MB" -v hw="$(hwm_kib)" -v sv="$(supervisor_kib)" 'BEGIN {
    printf "anchor: %d MB straight into a file:     %.3f s\n", mb, a / 1e6
    printf "%d MB stdout via /execute-shell:     %.3f s, HTTP 200, sha256 equal (goal < 1 s)\n", mb, h
    printf "ratio:                              %.2f\n", h / (a / 1e6)
    printf "sbx-httpd peak RSS (VmHWM):         %.1f MiB (goal < 32)\n", hw / 1024
    printf "sbx-run peak RSS (VmHWM):           %.1f MiB (goal < 32)\n", sv / 1024
}'
rm -rf "$work"/data/runner-executions/runs/h*
post o2 "head -c 1073741824 /dev/zero | tr '\\0' b" # the whole budget, to the byte
python3 - "$work/out" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
out = doc["stdout"]
assert len(out) == 1073741824 and out.count("b") == len(out), "1 GiB stdout incomplete"
assert doc["stderr"] == "" and doc["truncated"] is False
PY
awk -v h="$t" -v hw="$(hwm_kib)" -v sv="$(supervisor_kib)" 'BEGIN {
    printf "1 GiB stdout via /execute-shell:    %.2f s, valid JSON, every byte\n", h
    printf "sbx-httpd peak RSS after 1 GiB:     %.1f MiB (goal < 32)\n", hw / 1024
    printf "sbx-run peak RSS, 1 GiB run:        %.1f MiB (goal < 32)\n", sv / 1024
}'
