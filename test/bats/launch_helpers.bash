# launch_helpers.bash — a world-searchable scratch tree for sandbox tests
# (a root-started launch runs the workload as an unprivileged uid, which
# must reach the workspace and the identity files), and spec helpers.
load helpers

launch_setup() {
    WORK=$(mktemp -d /tmp/sbx-launch-test.XXXXXX)
    chmod 755 "$WORK"
    WS="$WORK/ws"
    mkdir -p "$WS"
    export SBX_DATA_DIR="$WORK/data"
    unset SBX_RUN_AS
}

launch_teardown() {
    end_jobs
    rm -rf "$WORK"
}

# spec_sh SCRIPT [EXTRA-JSON]: a spec running /bin/sh -c SCRIPT in $WS.
spec_sh() {
    jq -cn --arg s "$1" --arg ws "$WS" --argjson extra "${2:-{\}}" \
        '{argv: ["/bin/sh", "-c", $s], workspace: $ws} + $extra'
}

# in_sandbox SCRIPT [EXTRA-JSON]: runs SCRIPT in a sandbox (output in $output).
in_sandbox() {
    run --separate-stderr sbx-launch - <<<"$(spec_sh "$@")"
    # A failure says why (bats shows $output, not $stderr).
    [ "$status" -eq 0 ] || echo "# sbx-launch exited $status: $stderr" >&3
}

# The uid a sandbox started by this user runs as.
expected_uid() {
    if [ "$(id -u)" -eq 0 ]; then echo 10001; else id -u; fi
}
