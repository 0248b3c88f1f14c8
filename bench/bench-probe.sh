#!/bin/sh
# sbx-probe's wall time, cold (every probe sandbox runs) and cached (no bwrap
# at all), as ratios against the anchor: one raw `bwrap ... true` sandbox.
set -eu
cd "$(dirname "$0")/.."
N=${N:-50}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

now_ns() { date +%s%N; }

# time_n CMD...: mean nanoseconds of N runs.
time_n() {
    start=$(now_ns)
    i=0
    while [ "$i" -lt "$N" ]; do "$@" >/dev/null 2>&1 || true; i=$((i + 1)); done
    echo $(( ($(now_ns) - start) / N ))
}

anchor=$(time_n bwrap --unshare-all --unshare-user --die-with-parent --ro-bind /usr /usr \
    --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc -- /usr/bin/true)
cold=$(time_n bin/sbx-probe --no-cache)
bin/sbx-probe --cache-dir "$cache" >/dev/null 2>&1
cached=$(time_n bin/sbx-probe --cache-dir "$cache")

awk -v a="$anchor" -v c="$cold" -v k="$cached" -v n="$N" 'BEGIN {
    printf "runs per figure:            %d\n", n
    printf "anchor (raw bwrap sandbox): %.2f ms\n", a / 1e6
    printf "sbx-probe cold:             %.2f ms  (%.2fx anchor)\n", c / 1e6, c / a
    printf "sbx-probe cached:           %.2f ms  (%.2fx anchor)\n", k / 1e6, k / a
}'
