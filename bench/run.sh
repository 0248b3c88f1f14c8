#!/bin/sh
# Runs every benchmark under bench/; each prints ratios against an anchor
# measured in the same run.
set -eu
cd "$(dirname "$0")/.."
for b in bench/bench-*.sh; do
    echo "== $b"
    bash "$b"
done
