#!/usr/bin/env bats
# sbx-launch's input: bad specs exit 2 with one JSON error naming the field
# and leave nothing behind; --dry-run golden records for each layout.

load launch_helpers

setup() {
    launch_setup
    GOLDEN="$FIXTURES/golden"
    CAPS="$FIXTURES/capabilities"
}

teardown() {
    launch_teardown
}

# bad_spec JSON FIELD-TEXT: the spec is refused with exit 2 and one error line.
bad_spec() {
    run --separate-stderr sbx-launch --capabilities "$CAPS/supported.json" - <<<"$1"
    assert_failure 2
    [ "$output" = "" ]
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
    jq -e --arg want "$2" '.level == "error" and (.message | contains($want))' <<<"$stderr" >/dev/null ||
        fail "expected an error containing '$2', got: $stderr"
}

@test "argv: missing, empty, not strings, empty program" {
    bad_spec '{}' "argv: required field is missing"
    bad_spec '{"argv":[]}' "argv: must be a non-empty array of strings"
    bad_spec '{"argv":"true"}' "argv: must be an array"
    bad_spec '{"argv":["true",1]}' "argv[1]: must be a string"
    bad_spec '{"argv":[""]}' "argv[0]: must not be empty"
}

@test "unknown fields, wrong types, duplicate keys, invalid JSON, NUL bytes" {
    bad_spec '{"argv":["true"],"workdir":"/"}' "workdir: unknown field"
    bad_spec '{"argv":["true"],"tmpSizeBytes":"1G"}' "tmpSizeBytes: must be an integer"
    bad_spec '{"argv":["true"],"argv":["false"]}' "duplicate object key"
    bad_spec '{"argv":["true"]' "stdin:2:0: '}' expected"
    bad_spec '{"argv":["tr\u0000ue"]}' "stdin:1:"
    bad_spec '{"argv":["true"],"network":{"mode":"none","extra":1}}' "network.extra: unknown field"
    bad_spec '[1]' "the document must be an object"
}

@test "workspace: relative, missing, not a directory" {
    bad_spec '{"argv":["true"],"workspace":"ws"}' "workspace: must be an absolute path"
    bad_spec "{\"argv\":[\"true\"],\"workspace\":\"$WORK/missing\"}" "workspace: $WORK/missing: No such file or directory"
    touch "$WORK/file"
    bad_spec "{\"argv\":[\"true\"],\"workspace\":\"$WORK/file\"}" "is not a directory"
    bad_spec "{\"argv\":[\"true\"],\"readOnlyWorkspace\":\"$WORK\"}" "readOnlyWorkspace: needs a workspace"
}

@test "cwd: relative, escaping through '..', through a symlink, outside, not a directory" {
    mkdir "$WS/sub"
    ln -s /etc "$WS/etc-link"
    touch "$WS/file"
    bad_spec "$(spec_sh true '{"cwd":"sub"}')" "cwd: must be an absolute sandbox path"
    bad_spec "$(spec_sh true '{"cwd":"/workspace/sub/../.."}')" "without '.', '..'"
    bad_spec "$(spec_sh true '{"cwd":"/workspace/etc-link"}')" "cwd: etc-link: a symbolic link on the path (refused)"
    bad_spec "$(spec_sh true '{"cwd":"/tmp"}')" "cwd: /tmp is not inside the workspace"
    bad_spec "$(spec_sh true '{"cwd":"/workspacex"}')" "is not inside the workspace"
    bad_spec "$(spec_sh true '{"cwd":"/workspace/file"}')" "cwd: file: is not a directory"
    bad_spec "$(spec_sh true '{"cwd":"/workspace/nope"}')" "No such file or directory"
}

@test "env: reserved, blocked and malformed names; oversized values" {
    for name in PATH HOME LANG SSL_CERT_FILE HTTPS_PROXY NO_PROXY ALL_PROXY PYTHONPATH SBX_X ASCEND_HOME; do
        bad_spec "$(spec_sh true "{\"env\":{\"$name\":\"x\"}}")" "env.$name: reserved"
    done
    for name in LD_PRELOAD LD_LIBRARY_PATH BASH_FUNC_x%% BASH_ENV ENV IFS CDPATH PROMPT_COMMAND PS4 SHELLOPTS BASHOPTS PYTHONHOME PYTHONSTARTUP; do
        case $name in BASH_FUNC_*) want="must match" ;; *) want="env.$name: refused" ;; esac
        bad_spec "$(spec_sh true "{\"env\":{\"$name\":\"x\"}}")" "$want"
    done
    bad_spec "$(spec_sh true '{"env":{"1X":"x"}}')" "env.1X: a name must match"
    bad_spec "$(spec_sh true '{"env":{"A-B":"x"}}')" "env.A-B: a name must match"
    bad_spec "$(spec_sh true '{"env":{"A":1}}')" "env.A: must be a string"
    big=$(head -c 32769 /dev/zero | tr '\0' x)
    bad_spec "$(spec_sh true "{\"env\":{\"BIG\":\"$big\"}}")" "env.BIG: value larger than 32 KiB"
    # Nine values of 32000 bytes: each is allowed, together they exceed 256 KiB.
    jq -cn --arg v "${big:0:32000}" --arg ws "$WS" \
        '{argv: ["true"], workspace: $ws, env: ([range(1; 10) | {key: "V\(.)", value: $v}] | from_entries)}' \
        > "$WORK/many.json"
    bad_spec "$(cat "$WORK/many.json")" "env.V9: env larger than 256 KiB in total"
}

@test "network, devices, environment, tmpSizeBytes" {
    bad_spec "$(spec_sh true '{"network":{"mode":"domain-allowlist"}}')" "network.socket: domain-allowlist needs the absolute path of an sbx-egress gateway socket"
    bad_spec "$(spec_sh true "{\"network\":{\"mode\":\"domain-allowlist\",\"socket\":\"$WORK/none.sock\"}}")" "network.socket: $WORK/none.sock: not a socket"
    bad_spec "$(spec_sh true "{\"network\":{\"mode\":\"domain-allowlist\",\"socket\":\"$WS\"}}")" "not a socket"
    bad_spec "$(spec_sh true '{"network":{"mode":"none","socket":"/x"}}')" "network.socket: only with mode"
    bad_spec "$(spec_sh true '{"network":{"mode":"domain-allowlist","allowedDomains":["a.test"]}}')" "network.allowedDomains: unknown field"
    bad_spec "$(spec_sh true '{"env":{"PIP_PROXY":"x"}}')" "env.PIP_PROXY: reserved"
    bad_spec "$(spec_sh true '{"env":{"GIT_CONFIG_COUNT":"0"}}')" "env.GIT_CONFIG_COUNT: reserved"
    bad_spec "$(spec_sh true '{"network":{"mode":"open"}}')" "network.mode: must be"
    bad_spec "$(spec_sh true '{"devices":{"npu":[0]}}')" "devices.npu: unknown field"
    bad_spec "$(spec_sh true '{"devices":{"nodes":[{"host":"/dev/null","sandbox":"/dev/d0"}],"env":{"ASCEND_X":"1"}},"env":{"TOOLCHAIN_HOME":"/x"}}')" "env.TOOLCHAIN_HOME: reserved"
    bad_spec "$(spec_sh true '{"environment":{"prefix":"relative"}}')" "environment.prefix: must be an absolute path"
    bad_spec "$(spec_sh true '{"environment":{}}')" "environment.prefix: required field is missing"
    bad_spec "$(spec_sh true '{"tmpSizeBytes":1024}')" "tmpSizeBytes: must be from 1 MiB"
}

@test "a refused spec leaves nothing behind: no data dir, no chown" {
    [ "$(id -u)" -eq 0 ] || skip "ownership changes happen only for root launches"
    touch "$WS/mine"
    bad_spec "$(spec_sh true '{"env":{"LD_PRELOAD":"x"}}')" "env.LD_PRELOAD"
    [ ! -e "$SBX_DATA_DIR" ]
    [ "$(stat -c %u "$WS/mine")" = 0 ]
}

@test "an unusable host is refused with exit 4 and the probe's remedy" {
    run --separate-stderr sbx-launch --capabilities "$CAPS/unusable.json" - <<<"$(spec_sh true)"
    assert_failure 4
    [[ "$stderr" == *'"code":"sandbox-unusable"'* ]]
    [[ "$stderr" == *"No permissions to create new namespace"* ]]
    [[ "$stderr" == *'"remedy":"Check the sysctls"'* ]]
}

@test "a file that is not a probe answer is refused as capabilities" {
    echo '{"usable":true}' > "$WORK/caps.json"
    run --separate-stderr sbx-launch --capabilities "$WORK/caps.json" - <<<"$(spec_sh true)"
    assert_failure 2
    [[ "$stderr" == *"capabilities: not a probe answer"* ]]
}

# dry_run CAPS SPEC: prints the record's argv, cwd and the host directory each
# --bind-fd slot holds, one item per line, with
# the scratch paths templated and the host-optional binds removed.
dry_run() {
    run --separate-stderr sbx-launch --dry-run --capabilities "$CAPS/$1.json" - <<<"$2"
    assert_success
    uid=$(expected_uid)
    gid=$(jq -r .runAs.gid <<<"$output")
    jq -r '.argv[], "--- cwd", .cwd, "--- seccomp", .seccompProfile, "--- binds", (.binds[] | "\(.fd) \(.path)")' <<<"$output" |
        awk -v skip=0 '
            skip > 0 { skip--; next }
            $0 == "--ro-bind" { getline src; getline dst
                if (src == dst && (src == "/etc/alternatives" || src == "/etc/fonts" || src ~ /^\/etc\/(ssl|pki)\//)) next
                if (src == "/dev/null") next
                print; print src; print dst; next }
            $0 == "--setenv" { getline k; getline v
                if (k ~ /^(SSL_CERT_FILE|SSL_CERT_DIR|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE)$/) next
                print; print k; print v; next }
            { print }' |
        sed -e "s|$WORK|@WORK@|g" -e "s|$SBX_BIN|@BIN@|g" -e "s|-$uid-$gid\$|-@UID@-@GID@|"
}

# A Unix socket the workload's uid may use, standing in for a gateway's.
make_socket() {
    python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1"
    chmod 600 "$1"
    [ "$(id -u)" -ne 0 ] || chown "$(expected_uid)" "$1"
}

# golden NAME CAPS SPEC; SBX_GOLDEN_UPDATE=1 rewrites the file (review the diff!).
golden() {
    if [ -n "${SBX_GOLDEN_UPDATE:-}" ]; then
        dry_run "$2" "$3" > "$GOLDEN/$1.txt"
    fi
    diff -u "$GOLDEN/$1.txt" <(dry_run "$2" "$3")
}

@test "golden: plain" {
    golden plain supported "$(spec_sh 'echo hi' '{"env":{"A":"1"}}')"
}

@test "golden: nested read-only parent (workspace at /workspace/<rel>)" {
    mkdir -p "$WORK/parent/proj/ws"
    WS="$WORK/parent/proj/ws"
    golden nested-parent supported "$(spec_sh 'echo hi' "{\"readOnlyWorkspace\":\"$WORK/parent\",\"cwd\":\"/workspace/proj/ws\"}")"
}

@test "golden: a parent that is not an ancestor (at /parent_workspace)" {
    mkdir -p "$WORK/other"
    golden separate-parent supported "$(spec_sh 'echo hi' "{\"readOnlyWorkspace\":\"$WORK/other\"}")"
}

@test "golden: managed environment" {
    mkdir -p "$WORK/env/bin"
    golden managed-env supported "$(spec_sh 'python -V' "{\"environment\":{\"prefix\":\"$WORK/env\"}}")"
}

@test "golden: domain-allowlist (bridge first, the socket at /run/sbx, proxy variables, network profile)" {
    make_socket "$WORK/gw.sock"
    golden domain-allowlist supported "$(spec_sh 'curl -sS http://api.test/' "{\"network\":{\"mode\":\"domain-allowlist\",\"socket\":\"$WORK/gw.sock\"}}")"
}

@test "golden: NPU chips (renumbered nodes on the fresh /dev, CANN env, PATH prefix, npu profile)" {
    touch "$WORK/install.info"
    golden npu-chips supported "$(spec_sh 'npu-smi info' "{\"devices\":{\"vendor\":\"ascend\",\"hostIndices\":[4,6],
        \"nodes\":[{\"host\":\"/dev/null\",\"sandbox\":\"/dev/davinci0\"},{\"host\":\"/dev/zero\",\"sandbox\":\"/dev/davinci1\"}],
        \"readOnly\":[\"$WORK/install.info\"],\"env\":{\"ASCEND_HOME_PATH\":\"/opt/tk\",\"LD_LIBRARY_PATH\":\"/opt/tk/lib64\"},
        \"pathPrefix\":\"/usr/local/bin\"}}")"
}

@test "golden: /proc bind fallback capability" {
    golden proc-fallback bind-fallback "$(spec_sh 'echo hi')"
}

@test "golden: --disable-userns rejected capability" {
    golden option-rejected option-rejected "$(spec_sh 'echo hi' '{"tmpSizeBytes":67108864}')"
}

@test "host-optional binds appear exactly when the host has them" {
    run --separate-stderr sbx-launch --dry-run --capabilities "$CAPS/supported.json" - <<<"$(spec_sh true)"
    assert_success
    for p in /etc/alternatives /etc/fonts; do
        has=$(jq --arg p "$p" '[.argv | range(0; length - 2) as $i | select(.[$i] == "--ro-bind" and .[$i+1] == $p)] | length' <<<"$output")
        if [ -d "$p" ]; then [ "$has" -eq 1 ]; else [ "$has" -eq 0 ]; fi
    done
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        [ "$(jq -r .env.SSL_CERT_FILE <<<"$output")" = /etc/ssl/certs/ca-certificates.crt ]
        [ "$(jq -r .env.REQUESTS_CA_BUNDLE <<<"$output")" = /etc/ssl/certs/ca-certificates.crt ]
    fi
}

@test "managed environment: host interpreters are masked at their resolved targets" {
    mkdir -p "$WORK/env/bin"
    run --separate-stderr sbx-launch --dry-run --capabilities "$CAPS/supported.json" - <<<"$(spec_sh true "{\"environment\":{\"prefix\":\"$WORK/env\"}}")"
    assert_success
    masks=$(jq -r '.argv | [range(0; length - 2) as $i | select(.[$i] == "--ro-bind" and .[$i+1] == "/dev/null") | .[$i+2]] | .[]' <<<"$output")
    expected=$(for f in /usr/bin/python /usr/bin/python3 /usr/bin/python3.* /usr/bin/R /usr/bin/Rscript \
        /usr/local/bin/python /usr/local/bin/python3 /usr/local/bin/python3.* /usr/local/bin/R /usr/local/bin/Rscript; do
        case ${f##*/} in python3.*[!0-9]*) continue ;; esac
        [ -e "$f" ] && r=$(realpath "$f") && [ -f "$r" ] && case $r in /usr/*) echo "$r" ;; esac
    done | sort -u)
    [ "$masks" = "$expected" ]
    [ "$(jq -r .env.PATH <<<"$output")" = /opt/science-env/bin:/usr/bin:/bin ]
    [ -z "$(jq -r '.argv[]' <<<"$output" | grep -x /usr/bin/python3 || true)" ]
}

@test "managed environment: python3 inside is the environment's, the host's is masked" {
    mkdir -p "$WORK/env/bin"
    printf '#!/bin/sh\necho managed python\n' > "$WORK/env/bin/python3"
    chmod 755 "$WORK/env/bin/python3"
    in_sandbox 'python3; (/usr/bin/python3 -V) 2>/dev/null || echo host-python-masked; [ -s "$(readlink -f /usr/bin/python3)" ] && echo NONEMPTY || echo empty' \
        "{\"environment\":{\"prefix\":\"$WORK/env\"}}"
    assert_success
    assert_line --index 0 "managed python"
    assert_line --index 1 host-python-masked
    assert_line --index 2 empty
}

@test "a channel: sbx-report bound read-only and last on PATH, its module after a device toolkit's PYTHONPATH, however long" {
    long="/opt/toolkit/$(printf 'p%.0s' $(seq 3900))"
    spec=$(spec_sh true "{\"devices\":{\"nodes\":[{\"host\":\"/dev/null\",\"sandbox\":\"/dev/fakenpu\"}],\"env\":{\"PYTHONPATH\":\"$long\"}}}")
    run --separate-stderr sbx-launch --dry-run --channel-fd 7 --capabilities "$CAPS/supported.json" - 7>/dev/null <<<"$spec"
    assert_success
    [ "$(jq -r .env.PYTHONPATH <<<"$output")" = "$long:/run/sbx/python" ]
    [ "$(jq -r .env.PATH <<<"$output")" = /usr/bin:/bin:/run/sbx/bin ]
    # Bound by the fd the launcher opened, the record naming the host file.
    slot=$(jq -r '.argv | [range(0; length - 2) as $i | select(.[$i] == "--ro-bind-fd" and .[$i+2] == "/run/sbx/bin/sbx-report") | .[$i+1]] | .[0]' <<<"$output")
    [ "$(jq -r --argjson fd "$slot" '.binds[] | select(.fd == $fd) | .path' <<<"$output")" = "$SBX_BIN/sbx-report" ]
    # An empty toolkit path adds no empty entry (the working directory).
    spec=$(spec_sh true '{"devices":{"nodes":[{"host":"/dev/null","sandbox":"/dev/fakenpu"}],"env":{"PYTHONPATH":""}}}')
    run --separate-stderr sbx-launch --dry-run --channel-fd 7 --capabilities "$CAPS/supported.json" - 7>/dev/null <<<"$spec"
    assert_success
    [ "$(jq -r .env.PYTHONPATH <<<"$output")" = /run/sbx/python ]
    # Without a channel, neither.
    run --separate-stderr sbx-launch --dry-run --capabilities "$CAPS/supported.json" - <<<"$(spec_sh true)"
    [ "$(jq -r '.env.PYTHONPATH // "none"' <<<"$output")" = none ] && [ "$(jq -r .env.PATH <<<"$output")" = /usr/bin:/bin ]
}
