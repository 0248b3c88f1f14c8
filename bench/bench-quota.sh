#!/bin/bash
# sbx-quota usage on a 100k-file tree against `du -s --apparent-size -B1` on
# the same tree, in one run (median of 5, warm cache); on 10k symlinks with
# 4 KB targets (each one stat'ed for its blocks) against `du -s -B1`; then
# the CPU share of `sbx-quota watch` checking a 10k-file tree every 100 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_tree() { # DIR DIRS FILES-PER-DIR
    for ((d = 0; d < $2; d++)); do
        mkdir -p "$1/d$d"
        (cd "$1/d$d" && for ((f = 0; f < $3; f++)); do printf '%*s' $(((f * 37) % 4096)) '' > "f$f"; done)
    done
}
make_tree "$work/big" 100 1000
make_tree "$work/small" 10 1000
mkdir "$work/links"
p=$(printf '%0200d/' $(seq 20))
for ((i = 0; i < 10000; i++)); do printf '%s/n%d\n' "$p" $i; done | xargs ln -s -t "$work/links"

median5() { # CMD...: median wall ns of 5 runs
    local t=()
    for i in 1 2 3 4 5; do
        local s=$(date +%s%N); "$@" >/dev/null; t+=($(( $(date +%s%N) - s )))
    done
    printf '%s\n' "${t[@]}" | sort -n | sed -n 3p
}
du -s --apparent-size -B1 "$work/big" >/dev/null; bin/sbx-quota usage "$work/big" >/dev/null
anchor=$(median5 du -s --apparent-size -B1 "$work/big")
ours=$(median5 bin/sbx-quota usage "$work/big")
files=$(bin/sbx-quota usage "$work/big" | jq .files)
du -s -B1 "$work/links" >/dev/null
links_anchor=$(median5 du -s -B1 "$work/links")
links_ours=$(median5 bin/sbx-quota usage "$work/links")

TIMEFORMAT='%R %U %S'
cpu=$( { time bin/sbx-quota watch --max-bytes 100000000000 "$work/small" -- sleep 3 >/dev/null; } 2>&1 )
awk -v a="$anchor" -v o="$ours" -v f="$files" -v c="$cpu" -v la="$links_anchor" -v lo="$links_ours" 'BEGIN {
    split(c, t, " ")
    printf "tree:                        %d files in 100 dirs\n", f
    printf "anchor: du --apparent-size:  %.1f ms median of 5\n", a / 1e6
    printf "sbx-quota usage:             %.1f ms median of 5\n", o / 1e6
    printf "ratio:                       %.3f (goal <= 1.0)\n", o / a
    printf "10k long symlinks:           %.1f ms, du -B1 %.1f ms, ratio %.3f\n", lo / 1e6, la / 1e6, lo / la
    printf "watch, 10k files, 100 ms:    %.1f%% of one CPU over %.1f s\n", (t[2] + t[3]) / t[1] * 100, t[1]
}'
