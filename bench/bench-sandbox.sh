#!/bin/bash
# The sandbox itself: sbx-launch's bwrap argv against the upstream runner's
# exact flags (sandbox.md 2.1, same identity files, same filter on fd 3,
# same workspace as fd 6), both run as the workload uid, interleaved, in
# one run (goal: at most 1.15); then what each protection sbx adds costs,
# measured by leaving it out of sbx's argv one at a time (--size: the
# capped /dev/shm tmpfs; --ro-bind-try: the first /proc mask).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
N=${N:-50}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir "$work/ws"
export SBX_DATA_DIR="$work/data"
printf '{"argv":["/bin/true"],"workspace":"%s"}\n' "$work/ws" > "$work/spec.json"
bin/sbx-launch "$work/spec.json"    # owns the workspace, warms every cache
sandbox_anchor "$work/spec.json" "$work/ws"
ours=("${argv[@]}")
upstream=(/usr/bin/bwrap --die-with-parent --unshare-all --unshare-user)
grep -q -- '--disable-userns' <<< "${ours[*]}" && upstream+=(--disable-userns)
upstream+=(--cap-drop ALL --ro-bind /usr /usr --perms 0444 --ro-bind-data 6 /etc/passwd --perms 0444 --ro-bind-data 7 /etc/group)
for d in /etc/alternatives /etc/fonts /etc/ssl/certs /etc/pki/tls/certs /etc/pki/ca-trust; do
    [ ! -e "$d" ] || upstream+=(--ro-bind "$d" "$d")
done
upstream+=(--symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64)
grep -q -- '--proc /proc' <<< "${ours[*]}" && upstream+=(--proc /proc) || upstream+=(--ro-bind /proc /proc)
upstream+=(--dev /dev --tmpfs /tmp --bind-fd 8 /workspace --chdir /workspace --clearenv)
mapfile -t envs < <(jq -r '.env | to_entries[] | .key, .value' "$work/spec.json.dry")
for ((i = 0; i < ${#envs[@]}; i += 2)); do upstream+=(--setenv "${envs[i]}" "${envs[i + 1]}"); done
upstream+=(--seccomp 3 -- /bin/true)

# without FLAG ARGC: sbx's argv with the first FLAG and its ARGC arguments removed.
without() {
    local flag=$1 n=$2 skip=0 done=0 a
    out=()
    for a in "${ours[@]}"; do
        if [ "$skip" -gt 0 ]; then skip=$((skip - 1)); continue; fi
        if [ "$done" = 0 ] && [ "$a" = "$flag" ]; then skip=$n; done=1; continue; fi
        out+=("$a")
    done
}
ns() { date +%s%N; }
run() { local s; s=$(ns); "${as_user[@]}" "$@" 3<"$filter" 6< <(echo "$anchor_passwd") 7< <(echo "$anchor_group") 8<"$work/ws"; echo $(( $(ns) - s )); }
cases=("--new-session 0" "--disable-userns 0" "--remount-ro 1" "--size 3" "--ro-bind-try 2")
a=() b=()
declare -A t
for ((i = 0; i < N; i++)); do
    a+=("$(run "${ours[@]}")") b+=("$(run "${upstream[@]}")")
    for c in "${cases[@]}"; do
        # shellcheck disable=SC2086
        without $c
        t[$c]+="$(run "${out[@]}") "
    done
done
mo=$(median "${a[@]}") mu=$(median "${b[@]}")
awk -v o="$mo" -v u="$mu" -v n="$N" 'BEGIN {
    printf "runs each:                           %d (interleaved, as the workload uid)\n", n
    printf "anchor: upstream flags, same filter: %.2f ms median\n", u / 1e6
    printf "sbx-launch argv:                     %.2f ms median\n", o / 1e6
    printf "ratio sandbox/upstream:              %.3f (goal <= 1.15)\n", o / u
}'
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    m=$(median ${t[$c]})
    awk -v o="$mo" -v m="$m" -v c="${c% *}" 'BEGIN { printf "  without the first %-18s %.2f ms (it costs %+.2f ms)\n", c ":", m / 1e6, (o - m) / 1e6 }'
done
