#!/bin/bash
# Egress through bridge + gateway against the same transfer direct over
# loopback, in one run: 1 GiB throughput ratio (goal >= 0.8), 1000
# concurrent CONNECT tunnels held at once (from one sandbox: its per-peer
# cap raised to match), and the connect latency the proxy path adds
# (p50/p99 of connect + one echo round trip).
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES=${BYTES:-1073741824}
ROUNDS=${ROUNDS:-5}
TUNNELS=${TUNNELS:-1000}
SAMPLES=${SAMPLES:-1000}
work=$(mktemp -d /tmp/sbx-bench-egress.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
chmod 755 "$work"
mkdir "$work/ws"
chmod 777 "$work/ws"
export SBX_DATA_DIR="$work/data"
cc -O2 -pthread -o "$work/ws/egress-tool" bench/egress-tool.c
tool="$work/ws/egress-tool"

mkfifo "$work/ports" "$work/ready"
"$tool" serve "$work/ports" & pids+=($!)
read -r sink echo_port < "$work/ports"
printf '{"mode":"domain-allowlist","allowedDomains":["bench.test"],"allowPrivateNetwork":true}\n' > "$work/policy.json"
owner=()
[ "$(id -u)" -ne 0 ] || owner=(--socket-owner 10001)
bin/sbx-egress gateway --socket "$work/gw.sock" --policy "$work/policy.json" "${owner[@]}" --max-tunnels 1100 --peer-max-connections 1100 \
    --resolve "bench.test:$sink:127.0.0.1" --resolve "bench.test:$echo_port:127.0.0.1" --ready-fd 3 3>"$work/ready" & pids+=($!)
read -r _ < "$work/ready"

# in_sandbox ARGS...: the tool inside a sandbox whose only way out is the bridge.
in_sandbox() {
    jq -cn --arg ws "$work/ws" --arg s "$work/gw.sock" '$ARGS.positional as $a |
        {argv: (["/workspace/egress-tool"] + $a), workspace: $ws, network: {mode: "domain-allowlist", socket: $s}}' \
        --args "$@" > "$work/spec.json"
    bin/sbx-launch "$work/spec.json"
}

direct=() proxied=()
for ((i = 0; i < ROUNDS; i++)); do
    direct+=("$("$tool" push 127.0.0.1 "$sink" "$BYTES")")
    proxied+=("$(in_sandbox push 127.0.0.1 18118 "$BYTES" "bench.test:$sink")")
done
median() { printf "%s\n" "$@" | sort -g | awk "{ v[NR] = \$1 } END { print v[int((NR + 1) / 2)] }"; }
bd=$(median "${direct[@]}") bp=$(median "${proxied[@]}")
failed=$(in_sandbox tunnels 127.0.0.1 18118 "$TUNNELS" "bench.test:$echo_port")
read -r d50 d99 < <("$tool" latency 127.0.0.1 "$echo_port" "$SAMPLES")
read -r p50 p99 < <(in_sandbox latency 127.0.0.1 18118 "$SAMPLES" "bench.test:$echo_port")
awk -v b="$BYTES" -v d="$bd" -v p="$bp" -v r="$ROUNDS" -v n="$TUNNELS" -v f="$failed" \
    -v d50="$d50" -v d99="$d99" -v p50="$p50" -v p99="$p99" 'BEGIN {
    printf "transfer:                         %.0f MiB, median of %d\n", b / 1048576, r
    printf "anchor: direct loopback:          %.0f MiB/s\n", b / 1048576 / d
    printf "sandbox -> bridge -> gateway:     %.0f MiB/s\n", b / 1048576 / p
    printf "throughput ratio:                 %.3f (goal >= 0.8)\n", d / p
    printf "concurrent CONNECT tunnels:       %d held, %d failed\n", n, f
    printf "connect + round trip, direct:     p50 %.3f ms, p99 %.3f ms\n", d50, d99
    printf "connect + round trip, proxied:    p50 %.3f ms, p99 %.3f ms\n", p50, p99
    printf "added latency:                    p50 %.3f ms, p99 %.3f ms\n", p50 - d50, p99 - d99
}'
