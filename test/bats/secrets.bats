#!/usr/bin/env bats
# sbx-secrets from a shell: put, ls, rotate, rm and check; every refusal
# names its field and leaves the store as it was; the store is 0700 and
# its files 0600, written with no temp file left; a symlinked or open store
# is refused; and the value never reaches stdout, stderr or argv.

load helpers

VALUE='hf_Sup3rS3cretValue-0123456789'

setup() {
    WORK=$(mktemp -d /tmp/sbx-secrets-test.XXXXXX)
    export SBX_DATA_DIR="$WORK/data"
    unset SCIENCE_AGENT_DATA_DIR
    STORE="$WORK/data/secrets"
    POLICY="$WORK/policy.json"
    echo '{"mode":"domain-allowlist","allowedDomains":["huggingface.co","*.hf.co","api.github.com:443"]}' > "$POLICY"
}

teardown() {
    rm -rf "$WORK"
}

# secrets ARGS...: sbx-secrets with stdin from $IN (default: the value and
# a newline); stdout in $output, stderr in $stderr, both checked for the
# value (no command ever prints it).
secrets() {
    run --separate-stderr sbx-secrets "$@" < <(printf '%s' "${IN-$VALUE$'\n'}")
    never_shown
}

never_shown() {
    [[ "$output$stderr" != *"$VALUE"* ]] || fail "the value was printed: $output $stderr"
    [[ "$output$stderr" != *"S3cret"* ]] || fail "part of the value was printed: $output $stderr"
}

put_hf() {
    secrets put hf --host huggingface.co --host '*.hf.co' --header 'Authorization: Bearer {}' --env HF_TOKEN "$@"
}

# refused_as EXIT CODE MESSAGE-PART: the last run failed so, its diagnostic
# naming what it refused.
refused_as() {
    assert_equal "$status" "$1"
    assert_equal "$(jq -r .code <<<"$stderr")" "$2"
    [[ "$(jq -r .message <<<"$stderr")" == *"$3"* ]] || fail "message: $(jq -r .message <<<"$stderr"), expected: $3"
}

# unchanged: the store holds exactly what $snapshot recorded.
snapshot() { snap=$(cd "$STORE" 2>/dev/null && ls -A | sort && cat -- *.json 2>/dev/null); }
unchanged() {
    local before=$snap
    snapshot
    assert_equal "$snap" "$before"
}

@test "put stores the value in a 0600 file of a 0700 store and prints its metadata, never the value" {
    put_hf
    assert_success
    assert_equal "$(jq -c '[.name, .hosts, .env, .header, .rotatedAt, .lastUsedAt]' <<<"$output")" \
        '["hf",["huggingface.co","*.hf.co"],"HF_TOKEN","authorization: Bearer {}",null,null]'
    [[ "$(jq_out .createdAt)" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$ ]]
    assert_equal "$(jq_out 'has("value")')" false
    assert_equal "$(stat -c %a "$STORE")" 700
    assert_equal "$(stat -c %a "$STORE/hf.json")" 600
    # One trailing newline dropped, the value as given otherwise.
    assert_equal "$(jq -r .value "$STORE/hf.json")" "$VALUE"
    # Written through a temp file: none is left.
    assert_equal "$(ls -A "$STORE" | sort | tr '\n' ' ')" ".lock hf.json "
    secrets ls
    assert_success
    assert_equal "$(jq -c '[.secrets[].name]' <<<"$output")" '["hf"]'
    assert_equal "$(jq_out '.secrets[0] | has("value")')" false
}

@test "put --json takes the whole secret on stdin; basic auth; ls sorts by name" {
    IN='{"name":"gh","value":"'"$VALUE"'","hosts":["api.github.com:443"],"env":"GH_TOKEN","basic":{"username":"bot"}}' \
        secrets put --json
    assert_success
    assert_equal "$(jq -c '[.name, .basic.username, .hosts]' <<<"$output")" '["gh","bot",["api.github.com:443"]]'
    put_hf
    assert_success
    secrets ls
    assert_equal "$(jq -c '[.secrets[].name]' <<<"$output")" '["gh","hf"]'
    assert_equal "$(jq -r .value "$STORE/gh.json")" "$VALUE"
    # A name on the command line and in the document must agree.
    IN='{"name":"other","value":"xxxxxxxxxx","hosts":["api.github.com"],"env":"GH_TOKEN","basic":{"username":"bot"}}' \
        secrets put gh --json
    refused_as 2 name-mismatch "name"
}

@test "an existing name is refused unless --replace, which keeps createdAt and sets rotatedAt" {
    put_hf
    created=$(jq_out .createdAt)
    snapshot
    put_hf
    refused_as 2 exists "secret hf exists"
    unchanged
    VALUE=hf_another-value-42 put_hf --replace
    assert_success
    assert_equal "$(jq_out .createdAt)" "$created"
    [ "$(jq_out .rotatedAt)" != null ]
    assert_equal "$(jq -r .value "$STORE/hf.json")" hf_another-value-42
}

@test "rotate replaces the value (stdin or --json) and sets rotatedAt; rm deletes; unknown names are refused" {
    put_hf
    VALUE=rotated-value-1 secrets rotate hf
    assert_success
    assert_equal "$(jq -r .value "$STORE/hf.json")" rotated-value-1
    [ "$(jq_out .rotatedAt)" != null ]
    IN='{"value":"rotated-value-2"}' VALUE=rotated-value-2 secrets rotate hf --json
    assert_success
    assert_equal "$(jq -r .value "$STORE/hf.json")" rotated-value-2
    secrets rotate nope
    refused_as 2 unknown-secret "unknown secret nope"
    secrets rm hf
    assert_success
    assert_output '{"deleted":"hf"}'
    [ ! -e "$STORE/hf.json" ]
    secrets rm hf
    refused_as 2 unknown-secret "unknown secret hf"
}

@test "bad input is refused by field, with nothing written" {
    put_hf
    snapshot
    secrets put Bad_Name --host huggingface.co --header 'authorization: {}' --env X_TOKEN
    refused_as 2 bad-name NAME
    secrets put other --host huggingface.co --header 'authorization: {}' --env HOME
    refused_as 2 reserved-env-name HOME
    secrets put other --host huggingface.co --header 'authorization: {}' --env lower_case
    refused_as 2 bad-field env
    for env in LD_PRELOAD SBX_X HTTPS_PROXY SSL_CERT_FILE PIP_CERT NODE_EXTRA_CA_CERTS PATH; do
        secrets put other --host huggingface.co --header 'authorization: {}' --env "$env"
        [ "$status" -eq 2 ] || fail "env $env was accepted"
    done
    secrets put other --host huggingface.co --header 'host: {}' --env X_TOKEN
    refused_as 2 bad-field "header: host is a header the gateway owns"
    secrets put other --host huggingface.co --header 'x-key: no hole' --env X_TOKEN
    refused_as 2 bad-field "{}"
    secrets put other --host huggingface.co --header 'x-key: {} {}' --env X_TOKEN
    refused_as 2 bad-field "exactly once"
    secrets put other --host huggingface.co --header 'bad name: {}' --env X_TOKEN
    refused_as 2 bad-field "token"
    secrets put other --host huggingface.co --basic 'a:b' --env X_TOKEN
    refused_as 2 bad-field basic.username
    secrets put other --host 10.0.0.1 --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-field "hosts[0]"
    secrets put other --host huggingface.co --host '*' --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-field "hosts[1]"
    secrets put other --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-field hosts
    secrets put other --host huggingface.co --header 'x-key: {}' --basic u --env X_TOKEN
    refused_as 2 bad-field "exactly one of header"
    # The value: CR, LF inside, NUL, and control bytes go into no header.
    IN=$'abc\rdefghij' secrets put other --host huggingface.co --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-value "byte 4"
    IN=$'abc\ndefghij\n' secrets put other --host huggingface.co --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-value "byte 4"
    IN=$'\n' secrets put other --host huggingface.co --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-value "8 to 4096 bytes"
    IN=$(head -c 5000 /dev/zero | tr '\0' a) secrets put other --host huggingface.co --header 'x-key: {}' --env X_TOKEN
    refused_as 2 bad-value "4096"
    IN='{"name":"other","value":"a\u0000bcdefghij","hosts":["huggingface.co"],"env":"X_TOKEN","header":"x: {}"}' secrets put --json
    refused_as 2 bad-value "byte 2"
    IN='{"name":"other","value":"xxxxxxxxxx","hosts":["huggingface.co"],"env":"X_TOKEN","header":"x: {}","createdAt":null}' secrets put --json
    refused_as 2 bad-field createdAt
    IN='{"name":"other","value":"xxxxxxxxxx","hosts":["huggingface.co"],"env":"X_TOKEN","header":"x: {}","extra":1}' secrets put --json
    refused_as 2 unknown-field extra
    # A JSON error never quotes the input (the value could be in it).
    IN='{"name":"other","value":"'"$VALUE"'  ' secrets put --json
    refused_as 2 bad-json "stdin:"
    secrets put other --json --host huggingface.co
    refused_as 2 usage "--json"
    unchanged
    # The value is never an argument: there is no option to give it.
    run sbx-secrets put other --value x
    assert_equal "$status" 2
}

@test "check: held secrets whose hosts the policy allows, wildcards covered only by wildcards, ports pinned" {
    put_hf
    IN='{"name":"gh","value":"'"$VALUE"'","hosts":["api.github.com:443"],"env":"GH_TOKEN","basic":{"username":"bot"}}' \
        secrets put --json
    secrets check --policy "$POLICY" hf gh
    assert_success
    assert_equal "$(jq -c . <<<"$output")" '{"secrets":[{"name":"hf","env":"HF_TOKEN","hosts":["huggingface.co","*.hf.co"]},{"name":"gh","env":"GH_TOKEN","hosts":["api.github.com:443"]}]}'
    # The policy on stdin; a wildcard above the secret's covers it.
    IN='{"mode":"domain-allowlist","allowedDomains":["huggingface.co","*.co"]}' secrets check --policy - hf
    assert_equal "$status" 2 # *.co is no allowlist entry (one label)
    IN='{"mode":"domain-allowlist","allowedDomains":["huggingface.co","*.cdn.hf.co","*.hf.co"]}' secrets check --policy - hf
    assert_success
    # *.hf.co is not covered by an exact hf.co, nor by a wildcard below it.
    IN='{"mode":"domain-allowlist","allowedDomains":["huggingface.co","hf.co","*.cdn.hf.co"]}' secrets check --policy - hf
    refused_as 3 secret-host-refused "secret hf may be sent to *.hf.co, which the network policy does not allow"
    IN='{"mode":"domain-allowlist","allowedDomains":["*.hf.co"]}' secrets check --policy - hf
    refused_as 3 secret-host-refused "secret hf may be sent to huggingface.co"
    # An exact host is covered by a wildcard above it.
    IN='{"mode":"domain-allowlist","allowedDomains":["*.github.com"]}' secrets check --policy - gh
    assert_success
    # Port pins: a policy pinned to 443 covers a secret pinned to 443 only.
    IN='{"mode":"domain-allowlist","allowedDomains":["api.github.com:8443"]}' secrets check --policy - gh
    refused_as 3 secret-host-refused "api.github.com:443"
    IN='{"mode":"domain-allowlist","allowedDomains":["huggingface.co:443","*.hf.co"]}' secrets check --policy - hf
    refused_as 3 secret-host-refused "huggingface.co,"
    # No network, no secrets.
    secrets check --policy none hf
    refused_as 3 secrets-need-network "domain-allowlist"
    IN='"none"' secrets check --policy - hf
    refused_as 3 secrets-need-network "domain-allowlist"
    secrets check --policy none
    assert_success
    assert_output '{"secrets":[]}'
}

@test "check refuses an unknown secret, a name given twice and two secrets with one env name; --touch records the use" {
    put_hf
    secrets check --policy "$POLICY" hf nope
    refused_as 2 unknown-secret "unknown secret nope"
    secrets check --policy "$POLICY" hf hf
    refused_as 2 bad-input "named twice"
    secrets put hf2 --host huggingface.co --header 'x-key: {}' --env HF_TOKEN
    assert_success
    secrets check --policy "$POLICY" hf hf2
    refused_as 2 duplicate-env "both set env HF_TOKEN"
    [ "$(jq -r .lastUsedAt "$STORE/hf.json")" = null ]
    secrets check --policy "$POLICY" --touch hf
    assert_success
    [[ "$(jq -r .lastUsedAt "$STORE/hf.json")" == 20* ]]
    assert_equal "$(jq -r .value "$STORE/hf.json")" "$VALUE"
    assert_equal "$(stat -c %a "$STORE/hf.json")" 600
    # An empty store (none at all) knows no secret either.
    rm -rf "$STORE"
    secrets check --policy "$POLICY" hf
    refused_as 2 unknown-secret "unknown secret hf"
    secrets ls
    assert_output '{"secrets":[]}'
}

@test "a store that is a symlink, someone else's, or open to others is refused; a symlinked secret file too" {
    mkdir -p "$WORK/real" "$WORK/data"
    chmod 700 "$WORK/real"
    ln -s "$WORK/real" "$STORE"
    put_hf
    refused_as 9 unsafe-store "symbolic link"
    [ -z "$(ls -A "$WORK/real")" ]
    rm "$STORE"
    mkdir -m 755 "$STORE"
    put_hf
    refused_as 9 unsafe-store "group or others"
    secrets ls
    refused_as 9 unsafe-store "group or others"
    chmod 700 "$STORE"
    put_hf
    assert_success
    ln -s "$STORE/hf.json" "$STORE/evil.json"
    secrets check --policy "$POLICY" evil
    refused_as 9 bad-secret-file "symbolic link"
    if [ "$(id -u)" -eq 0 ] && id sbxtest >/dev/null 2>&1; then
        chown sbxtest "$STORE"
        secrets ls
        refused_as 9 unsafe-store "another user"
    fi
}

@test "--store names the store; writers serialise on the store's lock" {
    secrets --store "$WORK/elsewhere" put hf --host huggingface.co --header 'x-key: {}' --env HF_TOKEN
    assert_success
    [ -f "$WORK/elsewhere/hf.json" ]
    [ ! -e "$STORE" ]
    # Eight writers at once: each rotation lands whole, none is lost.
    for i in $(seq 8); do
        printf 'rotated-value-%s\n' "$i" | sbx-secrets --store "$WORK/elsewhere" rotate hf >/dev/null 2>&1 &
    done
    wait
    [[ "$(jq -r .value "$WORK/elsewhere/hf.json")" =~ ^rotated-value-[1-8]$ ]]
    assert_equal "$(ls -A "$WORK/elsewhere" | sort | tr '\n' ' ')" ".lock hf.json "
}
