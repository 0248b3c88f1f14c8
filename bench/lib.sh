# lib.sh — sourced by the benchmarks: median of integers (nanoseconds), and
# the as-the-workload-uid prefix for an anchor run as root (setpriv).
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# as_workload_uid DRY-RUN-JSON: sets as_user=(setpriv ...) when root, else ().
as_workload_uid() {
    as_user=()
    [ "$(id -u)" -ne 0 ] || as_user=(setpriv --reuid "$(jq .runAs.uid "$1")" --regid "$(jq .runAs.gid "$1")" --clear-groups)
}
