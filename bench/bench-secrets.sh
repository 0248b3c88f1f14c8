#!/bin/bash
# Secret injection's price: HTTPS to a host a secret is bound to (the
# gateway terminates TLS, verifies the host over its own session and swaps
# the placeholder) against the plain CONNECT tunnel to the very same
# loopback server, from the same sandbox through the same gateway: a new
# connection with its handshake and one request, a request on a kept
# connection, and a 1 GiB download.
set -euo pipefail
cd "$(dirname "$0")/.."
BYTES=${BYTES:-1073741824}
SAMPLES=${SAMPLES:-200}
work=$(mktemp -d /tmp/sbx-bench-secrets.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work/ws" "$work/srv" "$work/store"
chmod 777 "$work/ws"
chmod 700 "$work/store"
export SBX_DATA_DIR="$work/data"
sh test/fixtures/test-ca.sh "$work" sec.test plain.test
cp bench/tls-client.py "$work/ca.pem" "$work/ws/"
chmod 644 "$work/ws/"*
mkfifo "$work/srv/port" "$work/ready"
python3 test/fixtures/https-secret-server.py "$work/server.pem" "$work/server.key" "$work/srv/port" "$work/srv/log" & pids+=($!)
read -r port < "$work/srv/port"
# The server's request log would grow by a line per request: discarded.
ln -sf /dev/null "$work/srv/log"
printf 'bench-value-0123456789abcdef\n' | bin/sbx-secrets --store "$work/store" put bench --host sec.test \
    --header 'authorization: Bearer {}' --env BENCH_TOKEN > /dev/null
placeholder=sbx-secret-bench-00112233445566778899aabbccddeeff
printf '{"mode":"domain-allowlist","allowedDomains":["sec.test","plain.test"],"allowPrivateNetwork":true}\n' > "$work/policy.json"
owner=()
[ "$(id -u)" -ne 0 ] || owner=(--socket-owner 10001)
bin/sbx-egress gateway --socket "$work/gw.sock" --policy "$work/policy.json" "${owner[@]}" \
    --resolve "sec.test:$port:127.0.0.1" --resolve "plain.test:$port:127.0.0.1" \
    --secrets-dir "$work/store" --secret "bench=$placeholder" --ca-out "$work/run-ca.pem" --upstream-ca "$work/ca.pem" \
    --ready-fd 3 3>"$work/ready" & pids+=($!)
read -r _ < "$work/ready"

# client MODE HOST N: the client in a sandbox whose only way out is the
# bridge; the run's bundle for the intercepted host, the test CA otherwise.
client() {
    local ca=/run/sbx/ca-bundle.pem
    [ "$2" = sec.test ] || ca=/workspace/ca.pem
    jq -cn --arg ws "$work/ws" --arg s "$work/gw.sock" --arg ca "$work/run-ca.pem" --arg ph "$placeholder" \
        '$ARGS.positional as $a | {argv: (["python3", "/workspace/tls-client.py"] + $a), workspace: $ws,
          env: {BENCH_TOKEN: $ph}, network: {mode: "domain-allowlist", socket: $s, caCertificate: $ca}}' \
        --args "$1" "$2" "$port" "$3" "$ca" > "$work/spec.json"
    bin/sbx-launch "$work/spec.json"
}

read -r th50 th99 < <(client handshake plain.test "$SAMPLES")
read -r ih50 ih99 < <(client handshake sec.test "$SAMPLES")
read -r ts50 ts99 < <(client steady plain.test "$((SAMPLES * 5))")
read -r is50 is99 < <(client steady sec.test "$((SAMPLES * 5))")
tt=$(client download plain.test "$BYTES")
it=$(client download sec.test "$BYTES")
awk -v b="$BYTES" -v tt="$tt" -v it="$it" -v th50="$th50" -v th99="$th99" -v ih50="$ih50" -v ih99="$ih99" \
    -v ts50="$ts50" -v ts99="$ts99" -v is50="$is50" -v is99="$is99" 'BEGIN {
    printf "new connection + GET, tunnel:      p50 %.3f ms, p99 %.3f ms\n", th50, th99
    printf "new connection + GET, intercepted: p50 %.3f ms, p99 %.3f ms\n", ih50, ih99
    printf "handshake added by interception:   p50 %.3f ms (ratio %.2f)\n", ih50 - th50, ih50 / th50
    printf "kept connection GET, tunnel:       p50 %.3f ms, p99 %.3f ms\n", ts50, ts99
    printf "kept connection GET, intercepted:  p50 %.3f ms, p99 %.3f ms\n", is50, is99
    printf "steady state added:                p50 %.3f ms (ratio %.2f)\n", is50 - ts50, is50 / ts50
    printf "anchor: 1 GiB through the tunnel:  %.0f MiB/s\n", b / 1048576 / tt
    printf "1 GiB intercepted:                 %.0f MiB/s\n", b / 1048576 / it
    printf "throughput ratio:                  %.3f (intercepted / tunnel)\n", tt / it
}'
