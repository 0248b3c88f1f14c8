#!/bin/bash
# sbx-launch running /bin/true against the very same bwrap argv run directly
# (same filter on fd 3), interleaved in one run; prints the medians and the
# ratio (goal: at most 1.05). As root, sbx-launch runs bwrap as the workload
# uid: a second anchor runs the argv as that uid through setpriv (one exec
# that switches the uid, as sbx-launch is), and is the ratio's anchor.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir "$work/ws"
export SBX_DATA_DIR="$work/data"
spec="$work/spec.json"
printf '{"argv":["/bin/true"],"workspace":"%s"}\n' "$work/ws" > "$spec"

bin/sbx-launch "$spec"    # warm every cache once
sandbox_anchor "$spec" "$work/ws"
direct=() launch=() bare=() switched=()
for ((i = 0; i < N; i++)); do
    t0=$(date +%s%N); anchor --caller; t1=$(date +%s%N)
    bin/sbx-launch "$spec"; t2=$(date +%s%N)
    /bin/true; t3=$(date +%s%N)
    anchor; t4=$(date +%s%N)
    direct+=($((t1 - t0))) launch+=($((t2 - t1))) bare+=($((t3 - t2))) switched+=($((t4 - t3)))
done
md=$(median "${direct[@]}") ml=$(median "${launch[@]}") mb=$(median "${bare[@]}") ms=$(median "${switched[@]}")
awk -v d="$md" -v l="$ml" -v b="$mb" -v s="$ms" -v n="$N" -v uid="${as_user[*]:+as the workload uid via setpriv}" 'BEGIN {
    printf "runs each:                      %d (interleaved)\n", n
    printf "bwrap argv run directly:         %.2f ms median (as the caller)\n", d / 1e6
    if (uid != "") printf "anchor: bwrap argv %s: %.2f ms median\n", uid, s / 1e6
    else s = d
    printf "sbx-launch spec:                 %.2f ms median\n", l / 1e6
    printf "ratio:                           %.3f (goal <= 1.05)\n", l / s
    if (uid != "") printf "ratio against the direct run:    %.3f (that run skips the uid switch and its exec)\n", l / d
    printf "context: one fork+exec of /bin/true costs %.2f ms here; sbx-launch adds %.2f ms\n", b / 1e6, (l - d) / 1e6
}'
