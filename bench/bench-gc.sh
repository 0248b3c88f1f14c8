#!/bin/bash
# The cost of collecting the snapshot store on a commit: a run's wall time
# with sbx-run starting a collection after every run (--gc-interval-s 0)
# against --no-gc, on a store with 20 versions of a 10k-file workspace;
# then `sbx-snap commit` of one changed file alone and while collections
# run back to back, with the collections' own figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
work=$(mktemp -d /tmp/sbx-bench-gc.XXXXXX)
chmod 755 "$work"
gc_loop=
cleanup() {
    [ -z "$gc_loop" ] || kill "$gc_loop" 2>/dev/null || true
    [ -z "$gc_loop" ] || wait "$gc_loop" 2>/dev/null || true
    flock "$work/state/snapshots/gc.lock" true 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
ns() { date +%s%N; }
runs=${BENCH_GC_RUNS:-15}

ws="$work/ws"
mkdir -p "$ws"
for ((d = 0; d < 100; d++)); do
    mkdir "$ws/d$d"
    (cd "$ws/d$d" && for ((f = 0; f < 100; f++)); do echo "file $d $f" > "f$f"; done)
done
store="$work/state/snapshots"
req() { jq -cn --arg id "$1" --arg ws "$ws" '{executionId: $id, language: "shell", code: "echo $RANDOM > v", workspace: $ws}'; }
# 25 versions of the workspace's ref (a collection keeps 20).
for i in $(seq 1 25); do
    bin/sbx-run --state-dir "$work/state" --transient --no-gc - <<<"$(req "seed$i")" > /dev/null
done

# One run, timed (ns); wait: for the collection it may have started.
timed_run() {
    local label=$1 wait=$2 s
    shift 2
    s=$(ns)
    bin/sbx-run --state-dir "$work/state" --transient "$@" - <<<"$(req "$label")" > /dev/null
    echo $(( $(ns) - s ))
    [ "$wait" = no ] || flock "$store/gc.lock" true
}
# Interleaved, so the machine's drift hits all three alike: no collection;
# one started after the run, waited for before the next (the trigger's own
# cost); a run (--no-gc) started right after another run started one, so
# that the collection, at idle priority, overlaps it.
a=() b=() c=()
for i in $(seq 1 "$runs"); do
    a+=($(timed_run "nogc-$i" yes --no-gc))
    b+=($(timed_run "gc-$i" yes --gc-interval-s 0))
    timed_run "trigger-$i" no --gc-interval-s 0 > /dev/null
    c+=($(timed_run "overlap-$i" yes --no-gc))
done
nogc=$(median "${a[@]}")
withgc=$(median "${b[@]}")
overlap=$(median "${c[@]}")
gc_json=$(cat "$store/gc.json")

# A commit of one changed file, alone and during back-to-back collections.
commit_times() {
    local t=() s
    for i in $(seq 1 "$runs"); do
        echo "$i $RANDOM" > "$ws/d0/f0"
        s=$(ns)
        bin/sbx-snap commit "$ws" --store "$store" --ref bench > /dev/null
        t+=($(( $(ns) - s )))
    done
    median "${t[@]}"
}
alone=$(commit_times)
( while :; do nice -n 19 ionice -c 3 bin/sbx-snap gc --store "$store" --keep 20 --min-age-s 0 > /dev/null; done ) &
gc_loop=$!
during=$(commit_times)
kill "$gc_loop"; wait "$gc_loop" 2>/dev/null || true; gc_loop=
flock "$store/gc.lock" true
loop_json=$(cat "$store/gc.json")

awk -v a="$nogc" -v b="$withgc" -v o="$overlap" -v c="$alone" -v d="$during" -v g="$gc_json" -v l="$loop_json" 'BEGIN {
    printf "run, 10k-file workspace, --no-gc:           %.1f ms (median)\n", a / 1e6
    printf "run, collection started after every run:    %.1f ms\n", b / 1e6
    printf "ratio (run with gc triggered / without):    %.3f\n", b / a
    printf "run, overlapping a collection:              %.1f ms\n", o / 1e6
    printf "ratio (run during a collection / without):  %.3f\n", o / a
    printf "sbx-snap commit, one file changed, alone:   %.1f ms\n", c / 1e6
    printf "the same during back-to-back collections (nice 19, idle I/O): %.1f ms\n", d / 1e6
    printf "ratio (commit during gc / alone):           %.3f\n", d / c
    printf "a collection after a run: %s\n", g
    printf "a collection in the loop:  %s\n", l
}'
