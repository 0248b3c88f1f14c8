#!/usr/bin/env bats
# secrets-egress.bats — secrets the sandbox never sees (issue #31): a run
# that names secrets gets placeholders and a gateway of its own, which
# intercepts HTTPS to the secrets' hosts only and swaps the placeholder for
# the value. Loopback only: the "hosts" are local servers named through
# --egress-resolve, with a test CA the gateway is told to trust.
load launch_helpers

# start_server NAME CERT|- [TOKEN-FILE]: an HTTPS (or plain) server in
# $WORK/NAME; its port in PORT_<NAME>, its request log $WORK/NAME/log.
start_server() {
    mkdir -p "$WORK/$1"
    mkfifo "$WORK/$1/port"
    local cert=$2 key=-
    [ "$cert" = - ] || key="$WORK/server.key"
    python3 "$FIXTURES/https-secret-server.py" "$cert" "$key" "$WORK/$1/port" "$WORK/$1/log" ${3:+"$3"} &
    local port
    await_fifo "$WORK/$1/port" port
    printf -v "PORT_$1" '%s' "$port"
}

# A minimal wheel in the index's directory.
make_wheel() {
    python3 - "$WORK/a/sbxdemo-1.0-py3-none-any.whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("sbxdemo/__init__.py", "VALUE = 1\n")
    z.writestr("sbxdemo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: sbxdemo\nVersion: 1.0\n")
    z.writestr("sbxdemo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("sbxdemo-1.0.dist-info/RECORD", "")
PY
}

setup() {
    launch_setup
    sh "$FIXTURES/test-ca.sh" "$WORK" api.test other.test
    STORE="$WORK/store"
    VALUE="hfv_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
    VALUE2="ghv_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
    printf '%s' "$VALUE" > "$WORK/token"
    printf '%s\n' "$VALUE" | sbx-secrets --store "$STORE" put hf --host api.test --header 'authorization: Bearer {}' \
        --env HF_TOKEN > /dev/null
    printf '%s\n' "$VALUE" | sbx-secrets --store "$STORE" put idx --host api.test --basic __token__ --env IDX_TOKEN > /dev/null
    printf '%s\n' "$VALUE2" | sbx-secrets --store "$STORE" put gh --host api.test --header 'x-api-key: {}' --env GH_TOKEN > /dev/null
    start_server a "$WORK/server.pem" "$WORK/token"
    start_server b -
    start_server c "$WORK/server.pem"
    make_wheel
    cp "$WORK/ca.pem" "$WS/testca.pem"
    chmod 644 "$WS/testca.pem"
    POLICY='{mode: "domain-allowlist", allowedDomains: ["api.test", "other.test"], allowPrivateNetwork: true}'
    OPTS=(--no-snapshot --state-dir "$WORK/state" --egress-dir "$WORK/eg" --secrets-dir "$STORE"
          --egress-upstream-ca "$WORK/ca.pem" --egress-resolve "api.test:$PORT_a:127.0.0.1"
          --egress-resolve "other.test:$PORT_b:127.0.0.1" --egress-resolve "other.test:$PORT_c:127.0.0.1")
}

teardown() {
    launch_teardown
}

# request ID CODE REFS-JSON [WORKSPACE]
request() {
    jq -cn --arg id "$1" --arg code "$2" --argjson refs "$3" --arg ws "${4:-$WS}" --argjson net "$(jq -cn "$POLICY")" \
        '{executionId: $id, language: "shell", code: $code, workspace: $ws, network: $net, secretRefs: $refs}'
}

# run_secret ID CODE REFS-JSON: sbx-run; its events in $output, the result in
# $result, its diagnostics in $WORK/ID.err.
run_secret() {
    run --separate-stderr sbx-run "${OPTS[@]}" - <<< "$(request "$@")"
    printf '%s\n' "$stderr" > "$WORK/$1.err"
    result=$(tail -n 1 <<< "$output" | jq -c .result)
}

@test "curl, urllib, requests and pip download reach a token-protected index with the secret; the server sees the value, the sandbox only the placeholder" {
    code=$(cat <<EOF
curl -sS --fail -o /dev/null -w 'curl=%{http_code}\n' https://api.test:$PORT_a/simple/sbxdemo/
curl -sS --fail -D - -H "Authorization: Bearer \$HF_TOKEN" https://api.test:$PORT_a/echo | grep -i -e '^x-echo' -e Authorization
curl -sS -D - -o /dev/null -u "x:\$HF_TOKEN" https://api.test:$PORT_a/echo | grep -i -e '^HTTP/' -e '^x-sandbox-network'
python3 -c "import os, urllib.request as u; print('urllib=%d' % u.urlopen(u.Request('https://api.test:$PORT_a/simple/sbxdemo/', headers={'Authorization': 'Bearer ' + os.environ['HF_TOKEN']})).status)"
if python3 -c 'import requests' 2>/dev/null; then python3 -c "import requests; print('requests=%d' % requests.get('https://api.test:$PORT_a/files/sbxdemo-1.0-py3-none-any.whl').status_code)"; else echo requests=absent; fi
python3 -m pip download --no-deps --disable-pip-version-check --no-cache-dir -q -d /tmp/dl --index-url "https://__token__:\$IDX_TOKEN@api.test:$PORT_a/simple" sbxdemo
ls /tmp/dl
echo "HF_TOKEN=\$HF_TOKEN"
env > /workspace/env.txt
cat /proc/[0-9]*/environ > /workspace/environs.txt 2>/dev/null || true
cp -r /tmp/dl /workspace/dl
EOF
)
    run_secret s1 "$code" '["hf", "idx"]'
    assert_success
    stdout=$(jq -r .stdout <<< "$result")
    [[ "$stdout" == *"curl=200"* ]] || fail "curl: $stdout $(jq -r .stderr <<< "$result")"
    [[ "$stdout" == *"urllib=200"* ]] || fail "urllib: $stdout"
    [[ "$stdout" == *"requests=200"* || "$stdout" == *"requests=absent"* ]] || fail "requests: $stdout"
    [[ "$stdout" == *"sbxdemo-1.0-py3-none-any.whl"* ]] || fail "pip: $stdout $(jq -r .stderr <<< "$result")"
    # The response field that echoed the value came back as the placeholder.
    [[ "$stdout" =~ [Xx]-[Ee]cho-[Aa]uthorization:\ Bearer\ sbx-secret-hf-[0-9a-f]{32} ]] || fail "echo: $stdout"
    [[ "$stdout" =~ HF_TOKEN=sbx-secret-hf-[0-9a-f]{32} ]] || fail "placeholder: $stdout"
    # A body that echoes the value has it starred out, its length kept.
    [[ "$stdout" == *"\"Authorization\": \"Bearer ${VALUE//?/*}\""* ]] || fail "body: $stdout"
    # The placeholder outside its secret's form (here: Basic credentials
    # of a header secret) is refused even for its own host.
    [[ "$stdout" == *"HTTP/1.1 403"*"placeholder of secret hf outside its field: it goes only in authorization: Bearer {}"* ]] ||
        fail "form: $stdout"
    # The server saw the value: as Bearer (curl, urllib) and in Basic credentials (pip).
    grep -q "\"Authorization\": \"Bearer $VALUE\"" "$WORK/a/log"
    basic=$(printf '__token__:%s' "$VALUE" | base64 -w0)
    grep -q "\"Authorization\": \"Basic $basic\"" "$WORK/a/log"
    # Nothing the sandbox held or left, nothing sbx-run said, has the value.
    grep -q "HF_TOKEN=sbx-secret-hf-" "$WS/env.txt"
    grep -q "IDX_TOKEN=sbx-secret-idx-" "$WS/environs.txt"
    ! grep -rqF -- "$VALUE" "$WS" "$WORK/s1.err" "$WORK/state"
    ! grep -qF -- "$VALUE" <<< "$output"
}

@test "the placeholder sent to a second allowed host in a field, the target or the body is a 403 naming the secret; that host sees nothing" {
    code=$(cat <<EOF
curl -sS -o /dev/null -w '%{http_code} ' -H "X-Token: \$HF_TOKEN" http://other.test:$PORT_b/field
curl -sS -o /dev/null -w '%{http_code} ' "http://other.test:$PORT_b/target?t=\$HF_TOKEN"
curl -sS -o /dev/null -w '%{http_code} ' --data "t=\$HF_TOKEN" http://other.test:$PORT_b/body
curl -sS -o /dev/null -w '%{http_code} ' -u "u:\$HF_TOKEN" http://other.test:$PORT_b/basic
curl -sS -D - -o /dev/null -H "X-Token: \$HF_TOKEN" http://other.test:$PORT_b/why | grep -i '^x-sandbox-network'
curl -sS -o /dev/null -w 'plain=%{http_code}\n' http://other.test:$PORT_b/clean
EOF
)
    run_secret s2 "$code" '["hf"]'
    assert_success
    events=$output
    stdout=$(jq -r .stdout <<< "$result")
    [[ "$stdout" == "403 403 403 403 "* ]] || fail "$stdout"
    [[ "$stdout" == *"placeholder of secret hf, which may be sent only to api.test over HTTPS"* ]] || fail "$stdout"
    [[ "$stdout" == *"plain=200"* ]] || fail "$stdout"
    # Only the clean request arrived.
    run jq -r .path "$WORK/b/log"
    assert_output "/clean"
    # Each refusal is an event of the run, naming the secret.
    [ "$(grep -c '"event":"secret-refused"' <<< "$events")" -eq 5 ]
    grep '"event":"secret-refused"' <<< "$events" | head -n 1 | jq -e '.secret == "hf" and .status == 403'
    # And one egress denial of that host (the run's own gateway), counted.
    jq -e --arg w "other.test:$PORT_b" '.denials | map(select(.kind == "egress")) |
        length == 1 and .[0].what == $w and .[0].count == 5 and .[0].secret == "hf"' <<< "$result"
}

@test "a host without a bound secret is tunnelled as before: the client meets the server's own certificate" {
    code=$(cat <<EOF
curl -sS --fail -o /dev/null -w 'own=%{http_code}\n' --cacert /workspace/testca.pem https://other.test:$PORT_c/
rc=0; curl -sS -o /dev/null --cacert /workspace/testca.pem https://api.test:$PORT_a/ 2>/dev/null || rc=\$?; echo "bound=\$rc"
rc=0; curl -sS -o /dev/null https://other.test:$PORT_c/ 2>/dev/null || rc=\$?; echo "runbundle=\$rc"
EOF
)
    run_secret s3 "$code" '["hf"]'
    assert_success
    stdout=$(jq -r .stdout <<< "$result")
    # other.test verifies against the test CA alone: not intercepted;
    # api.test is (the run's CA), so the test CA alone fails (curl 60);
    # the run's bundle lacks the test CA: other.test's own certificate.
    [[ "$stdout" == *"own=200"* && "$stdout" == *"bound=60"* && "$stdout" == *"runbundle=60"* ]] || fail "$stdout"
}

@test "two tenants with one allowlist and different secrets: each gateway holds its own alone; no value in argv, environments, logs or answers" {
    [ "$(id -u)" -eq 0 ] || skip "reading a gateway's memory needs root"
    for t in 1 2; do
        mkdir -p "$WORK/ws$t"
        chmod 777 "$WORK/ws$t"
        mkfifo -m 666 "$WORK/ws$t/ready" "$WORK/ws$t/go"
    done
    code='curl -sS -o /dev/null -w "%{http_code}\n" https://api.test:'"$PORT_a"'/x; echo up > /workspace/ready; read -r _ < /workspace/go'
    sbx-run "${OPTS[@]}" - <<< "$(request t1 "$code" '["hf"]' "$WORK/ws1")" > "$WORK/t1.out" 2> "$WORK/t1.err" &
    run1=$!
    sbx-run "${OPTS[@]}" - <<< "$(request t2 "$code" '["gh"]' "$WORK/ws2")" > "$WORK/t2.out" 2> "$WORK/t2.err" &
    run2=$!
    await_fifo "$WORK/ws1/ready"
    await_fifo "$WORK/ws2/ready"
    gw_hf=$(pgrep -f -- "sbx-egress gateway --socket $WORK/eg/.*--secret hf=")
    gw_gh=$(pgrep -f -- "sbx-egress gateway --socket $WORK/eg/.*--secret gh=")
    [ -n "$gw_hf" ] && [ -n "$gw_gh" ] && [ "$gw_hf" != "$gw_gh" ]
    # Each holds its own (the control) and never the other's.
    [ "$(python3 "$FIXTURES/mem-find.py" "$gw_hf" "$VALUE")" = found ]
    [ "$(python3 "$FIXTURES/mem-find.py" "$gw_hf" "$VALUE2")" = absent ]
    [ "$(python3 "$FIXTURES/mem-find.py" "$gw_gh" "$VALUE2")" = found ]
    [ "$(python3 "$FIXTURES/mem-find.py" "$gw_gh" "$VALUE")" = absent ]
    for pid in "$gw_hf" "$gw_gh" "$run1" "$run2"; do
        ! tr '\0' '\n' < "/proc/$pid/environ" | grep -qF -e "$VALUE" -e "$VALUE2"
        ! tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -e "$VALUE" -e "$VALUE2"
    done
    ! grep -rqF -e "$VALUE" -e "$VALUE2" "$WORK/eg" "$WORK/state"
    echo go > "$WORK/ws1/go"
    echo go > "$WORK/ws2/go"
    wait "$run1"
    wait "$run2"
    for t in 1 2; do
        [ "$(tail -n 1 "$WORK/t$t.out" | jq -r .result.stdout)" = 200 ]
        ! grep -qF -e "$VALUE" -e "$VALUE2" "$WORK/t$t.out" "$WORK/t$t.err"
    done
    # The runs' gateways went with them, and so did their directories.
    ! pgrep -f -- "sbx-egress gateway --socket $WORK/eg/"
    [ -z "$(ls "$WORK/eg")" ]
    # The server saw each tenant's own field.
    grep -qi "\"Authorization\": \"Bearer $VALUE\"" "$WORK/a/log"
    grep -qi "\"X-Api-Key\": \"$VALUE2\"" "$WORK/a/log"
}

@test "the directory a killed run's gateway left is collected by the next secret run; a held one stays" {
    mkdir -p "$WORK/eg/run-00000000000000aa" "$WORK/eg/run-00000000000000bb" "$WORK/eg/run-00000000000000cc"
    touch "$WORK/eg/run-00000000000000aa/gw.sock.alive" "$WORK/eg/run-00000000000000bb/gw.sock.alive"
    touch -d '1 hour ago' "$WORK/eg/run-00000000000000aa" "$WORK/eg/run-00000000000000bb"
    # bb's gateway still lives (its lock held); cc is new (its gateway may be starting).
    exec 8<"$WORK/eg/run-00000000000000bb/gw.sock.alive"
    flock -x 8
    run_secret g1 'echo ran' '["hf"]'
    assert_success
    exec 8<&-
    [ ! -e "$WORK/eg/run-00000000000000aa" ]
    [ -d "$WORK/eg/run-00000000000000bb" ] && [ -d "$WORK/eg/run-00000000000000cc" ]
}

@test "a secret deleted, unknown or not allowed by the policy makes the run fail before it starts, naming it" {
    sbx-secrets --store "$STORE" rm hf
    run_secret d1 'echo ran' '["hf"]'
    assert_failure
    grep -q 'unknown secret hf' "$WORK/d1.err"
    POLICY='{mode: "domain-allowlist", allowedDomains: ["other.test"], allowPrivateNetwork: true}'
    run_secret d2 'echo ran' '["gh"]'
    assert_failure
    grep -q 'secret gh may be sent to api.test, which the network policy does not allow' "$WORK/d2.err"
    POLICY='{mode: "none"}'
    run_secret d3 'echo ran' '["gh"]'
    assert_failure 2
    grep -q "secretRefs: secrets need network with allowedDomains" "$WORK/d3.err"
}

@test "network.caCertificate: only its certificates enter the sandbox's bundle; a FIFO, a symlink or a file without one is refused" {
    printf '%s\n' '{"mode":"domain-allowlist","allowedDomains":["api.test"]}' > "$WORK/policy.json"
    owner=()
    [ "$(id -u)" -ne 0 ] || owner=(--socket-owner "$(expected_uid)")
    mkfifo "$WORK/ready"
    sbx-egress gateway --socket "$WORK/gw.sock" --policy "$WORK/policy.json" "${owner[@]}" --ready-fd 3 3>"$WORK/ready" &
    await_fifo "$WORK/ready"
    # A certificate with its key beside it: the key never enters.
    cat "$WORK/ca.pem" "$WORK/ca.key" > "$WORK/with-key.pem"
    spec() {
        jq -cn --arg ws "$WS" --arg s "$WORK/gw.sock" --arg ca "$1" \
            '{argv: ["/bin/sh", "-c", "cat /run/sbx/ca-bundle.pem; echo SSL_CERT_FILE=$SSL_CERT_FILE"], workspace: $ws,
              network: {mode: "domain-allowlist", socket: $s, caCertificate: $ca}}'
    }
    run --separate-stderr sbx-launch - <<< "$(spec "$WORK/with-key.pem")"
    assert_success
    assert_output --partial "$(head -n 2 "$WORK/ca.pem" | tail -n 1)"
    assert_output --partial "SSL_CERT_FILE=/run/sbx/ca-bundle.pem"
    refute_output --partial "PRIVATE KEY"
    # Refused before any sandbox: a FIFO (never blocked on), a symlink, no certificate.
    mkfifo "$WORK/fifo.pem"
    ln -s "$WORK/ca.pem" "$WORK/link.pem"
    for bad in fifo.pem link.pem ca.key; do
        run --separate-stderr timeout 20 sbx-launch - <<< "$(spec "$WORK/$bad")"
        assert_failure 2
        [[ "$stderr" == *"network.caCertificate: $WORK/$bad"* ]] || fail "$bad: $stderr"
    done
}
