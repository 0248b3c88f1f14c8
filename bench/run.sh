#!/bin/bash
# make bench: every benchmark under bench/, each measuring its own anchor in
# the same run; their full reports, then one table of the ratios (and the
# load and memory figures) with the machine they came from.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
for b in bench/bench-*.sh; do
    name=$(basename "$b" .sh)
    name=${name#bench-}
    echo "== $name"
    if bash "$b" 2>&1 | tee "$out/$name"; then :; else
        echo "bench $name FAILED"
        status=1
    fi
done
echo
echo "## sbx benchmarks — $(date -u +%Y-%m-%d), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
echo
printf '| %-8s | %-44s | %s\n' bench measure figure
printf '|%s|%s|%s\n' ---------- ---------------------------------------------- --------
for f in "$out"/*; do
    name=$(basename "$f")
    { grep -E -i 'ratio|peak RSS|lost|tunnels|order held|throughput:|p50' "$f" || true; } | while IFS= read -r line; do
        key=$(sed 's/:.*//' <<< "$line" | sed 's/ *$//')
        value=$(sed 's/^[^:]*: *//' <<< "$line")
        printf '| %-8s | %-44s | %s\n' "$name" "$key" "$value"
    done
done
exit "$status"
