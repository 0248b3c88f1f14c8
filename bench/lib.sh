# lib.sh — sourced by the benchmarks: median of integers (nanoseconds), and
# the as-the-workload-uid prefix for an anchor run as root (setpriv).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# as_workload_uid DRY-RUN-JSON: sets as_user=(setpriv ...) when root, else ().
as_workload_uid() {
    as_user=()
    [ "$(id -u)" -ne 0 ] || as_user=(setpriv --reuid "$(jq .runAs.uid "$1")" --regid "$(jq .runAs.gid "$1")" --clear-groups)
}

# sandbox_anchor SPEC WS: the very sandbox sbx-launch builds for SPEC (its
# --dry-run argv; SBX_DATA_DIR set), for bwrap to run directly with the
# same fds: the filter on 3, passwd and group as data on 8 and 9, WS on 10.
# Sets argv, filter and as_user; anchor [--caller] runs it (as the workload
# uid; --caller: as this process's uid).
sandbox_anchor() {
    bin/sbx-launch --dry-run "$1" > "$1.dry"
    mapfile -t argv < <(jq -r '.argv[]' "$1.dry")
    [ "$(jq -c '[.binds[].fd]' "$1.dry")" = "[8,9,10]" ] || { echo "unexpected binds: $(jq -c .binds "$1.dry")"; exit 1; }
    filter=$(ls "$SBX_DATA_DIR"/cache/seccomp-baseline-"$(jq -r .seccomp.arch "$1.dry")"-*.bpf)
    as_workload_uid "$1.dry"
    anchor_ws=$2
    anchor_passwd=$(printf 'sbx:x:%s:%s:sbx sandbox user:/tmp:/bin/sh' "$(jq .runAs.uid "$1.dry")" "$(jq .runAs.gid "$1.dry")")
    anchor_group=$(printf 'sbx:x:%s:' "$(jq .runAs.gid "$1.dry")")
}
anchor() {
    local who=("${as_user[@]}")
    [ "${1:-}" != --caller ] || who=()
    "${who[@]}" "${argv[@]}" 3<"$filter" 8< <(echo "$anchor_passwd") 9< <(echo "$anchor_group") 10<"$anchor_ws"
}

# anchor_concurrent CLIENTS RUNS: CLIENTS loops at once, each running the
# anchor RUNS times one after another; prints the raw sandbox's runs/s.
anchor_concurrent() {
    local clients=$1 runs=$2 k t0 t1 loops=()
    one_loop() { local i; for ((i = 0; i < runs; i++)); do anchor || exit 1; done; }
    t0=$(date +%s%N)
    for ((k = 0; k < clients; k++)); do one_loop & loops+=($!); done
    for l in "${loops[@]}"; do wait "$l" || { echo "a raw sandbox launch failed" >&2; return 1; }; done
    t1=$(date +%s%N)
    awk -v n=$((clients * runs)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", n / (ns / 1e9) }'
}
