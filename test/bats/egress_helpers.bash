# egress_helpers.bash — shared by the gateway suites: a loopback HTTP
# server, `sbx-egress gateway` on a Unix socket in $WORK, and sandboxes
# whose only way out is its bridge. Nothing leaves loopback.
load launch_helpers

# The loopback server ($PORT), the socket and the audit log of a test.
setup() {
    launch_setup
    mkfifo "$WORK/port"
    python3 "$FIXTURES/http-echo.py" "$WORK/port" &
    SERVER_PID=$!
    read -r PORT < "$WORK/port"
    SOCK="$WORK/gw.sock"
    LOG="$WORK/audit.log"
}

teardown() {
    [ -z "${GW_PID:-}" ] || kill "$GW_PID" 2>/dev/null || true
    [ -z "${HOLD_PID:-}" ] || kill "$HOLD_PID" 2>/dev/null || true
    [ -z "${HOLDERS[*]:-}" ] || kill "${HOLDERS[@]}" 2>/dev/null || true
    kill "$SERVER_PID" 2>/dev/null || true
    pkill -f -- "--socket $WORK/" || true
    launch_teardown
}

# gateway POLICY-JSON [GATEWAY-OPTIONS...]: starts a gateway and waits until
# it listens (it says so on --ready-fd).
gateway() {
    printf '%s\n' "$1" > "$WORK/policy.json"
    shift
    local owner=()
    [ "$(id -u)" -ne 0 ] || owner=(--socket-owner "$(expected_uid)")
    rm -f "$WORK/ready" && mkfifo "$WORK/ready"
    sbx-egress gateway --socket "$SOCK" --policy "$WORK/policy.json" --log "$LOG" "${owner[@]}" \
        --ready-fd 3 "$@" 3>"$WORK/ready" 2>"$WORK/gw.err" &
    GW_PID=$!
    local line
    read -r line < "$WORK/ready"
    [ "$line" = ready ]
}

private_policy='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":true}'

# net_sandbox SCRIPT: runs SCRIPT in a sandbox whose network is the gateway.
net_sandbox() {
    in_sandbox "$1" "$(jq -cn --arg s "$SOCK" '{network: {mode: "domain-allowlist", socket: $s}}')"
}
