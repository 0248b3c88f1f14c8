#!/usr/bin/env bats
# /secrets through a real sbx-httpd and sbx-secrets: bearer and signature
# required; put creates (201) or replaces (200), rotate, list and delete;
# bad input 400 by field, unknown or malformed names 404; and the value is
# in no answer, no log of the daemon and no file but the store's.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

VALUE='hf_Sup3rS3cretValue-0123456789'

# call METHOD PATH [BODY]: a signed request (the signature over BODY,
# empty for GET and DELETE); $status_code and $output, never the value.
call() {
    printf '%s' "${3:-}" > "$WORK/req.body"
    read -r ts sig < <(sign "$WORK/req.body")
    api "$1" "$2" -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" \
        ${3:+--data-binary @"$WORK/req.body"}
    [[ "$output" != *S3cret* ]] || fail "the value is in the answer: $output"
}

hf_body() {
    jq -cn --arg v "${1:-$VALUE}" '{value: $v, hosts: ["huggingface.co"], env: "HF_TOKEN", header: "authorization: Bearer {}"}'
}

@test "put creates (201) then replaces (200); list, rotate and delete; the value never leaves the store" {
    call PUT /secrets/hf "$(hf_body)"
    assert_equal "$status_code" 201
    assert_equal "$(jq -c '[.name, .env, .hosts, .header, .rotatedAt]' <<<"$output")" \
        '["hf","HF_TOKEN",["huggingface.co"],"authorization: Bearer {}",null]'
    created=$(jq_out .createdAt)
    call PUT /secrets/hf "$(hf_body "${VALUE}-2")"
    assert_equal "$status_code" 200
    assert_equal "$(jq_out .createdAt)" "$created"
    [ "$(jq_out .rotatedAt)" != null ]
    call GET /secrets
    assert_equal "$status_code" 200
    assert_equal "$(jq -c '[.secrets[].name]' <<<"$output")" '["hf"]'
    call POST /secrets/hf/rotate "{\"value\":\"${VALUE}-3\"}"
    assert_equal "$status_code" 200
    assert_equal "$(jq_out .name)" hf
    store="$WORK/data/secrets"
    assert_equal "$(stat -c %a "$store") $(stat -c %a "$store/hf.json")" "700 600"
    assert_equal "$(jq -r .value "$store/hf.json")" "${VALUE}-3"
    call DELETE /secrets/hf
    assert_equal "$status_code $output" '200 {"deleted":"hf"}'
    call DELETE /secrets/hf
    assert_equal "$status_code" 404
    assert_equal "$(jq_out .error)" "unknown secret hf"
    call POST /secrets/hf/rotate "{\"value\":\"${VALUE}-4\"}"
    assert_equal "$status_code" 404
    # Nowhere else: not in the daemon's logs, not in any file of the data
    # dir outside the store, not in /health.
    api GET /health
    [[ "$output" != *S3cret* ]]
    ! grep -r -l S3cret "$WORK/httpd.err" || fail "the value is in the daemon's log"
    ! grep -r -l --exclude-dir=secrets S3cret "$WORK/data" || fail "the value is in the data dir"
}

@test "the bearer and the signature are required; a signature over another body is refused" {
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/secrets"
    assert_output 401
    api GET /secrets
    assert_equal "$status_code" 401
    api PUT /secrets/hf --data-binary "$(hf_body)"
    assert_equal "$status_code" 401
    printf '%s' '{}' > "$WORK/other.body"
    read -r ts sig < <(sign "$WORK/other.body")
    api PUT /secrets/hf -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" \
        --data-binary "$(hf_body)"
    assert_equal "$status_code" 401
    [ ! -e "$WORK/data/secrets/hf.json" ]
}

@test "bad input is 400 naming the field; a name that is no secret's is 404; the value is never echoed" {
    call PUT /secrets/hf "$(jq -cn --arg v "$VALUE" '{value: $v, hosts: ["huggingface.co"], env: "HOME", header: "x: {}"}')"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == *HOME* ]]
    call PUT /secrets/hf "$(jq -cn '{value: "a\r\nb", hosts: ["huggingface.co"], env: "HF_TOKEN", header: "x: {}"}')"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == value:* ]]
    call PUT /secrets/hf "$(jq -cn --arg v "$VALUE" '{value: $v, hosts: ["10.0.0.1"], env: "HF_TOKEN", header: "x: {}"}')"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == "hosts[0]"* ]]
    call PUT /secrets/hf "$(jq -cn --arg v "$VALUE" '{name: "gh", value: $v, hosts: ["huggingface.co"], env: "HF_TOKEN", header: "x: {}"}')"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == name:* ]]
    # Broken JSON holding the value: the error quotes none of it.
    call PUT /secrets/hf "{\"value\": \"$VALUE"
    assert_equal "$status_code" 400
    call PUT /secrets/hf ''
    assert_equal "$status_code" 400
    call POST /secrets/hf/rotate '{"value":"xxxxxxxxxx"}'
    assert_equal "$status_code" 404
    call PUT /secrets/Bad.Name "$(hf_body)"
    assert_equal "$status_code" 404
    call DELETE /secrets/..%2Fx
    assert_equal "$status_code" 404
    call GET /secrets
    assert_equal "$status_code $output" '200 {"secrets":[]}'
    ! grep -r -l S3cret "$WORK/httpd.err" || fail "the value is in the daemon's log"
}

@test "an execution naming permissionEpoch.secretRefs sees only the placeholder; unknown, unallowed, malformed or without network is 400; they make a new revision" {
    call PUT /secrets/hf "$(hf_body)"
    assert_equal "$status_code" 201
    access='{"mode":"domain-allowlist","allowedDomains":["huggingface.co"],"allowPrivateNetwork":false}'
    req() {
        shell_request "$1" 'echo "$HF_TOKEN"' | jq -c --argjson refs "$2" --argjson access "$3" \
            '.permissionEpoch.networkPolicy = "domain-allowlist" | .permissionEpoch.networkAccess = $access |
             .permissionEpoch.secretRefs = $refs'
    }
    signed /execute-shell "$(req sr1 '["hf"]' "$access")"
    assert_equal "$status_code" 200
    [[ "$(jq -r .stdout <<< "$output")" =~ ^sbx-secret-hf-[0-9a-f]{32}$ ]] || fail "$output"
    [[ "$output" != *S3cret* ]]
    with=$(jq -r .networkAccessRevision <<< "$output")
    signed /execute-shell "$(req sr2 '[]' "$access")"
    assert_equal "$status_code" 200
    [ "$(jq -r .stdout <<< "$output")" = "" ]
    [ "$(jq -r .networkAccessRevision <<< "$output")" != "$with" ]
    signed /execute-shell "$(req sr3 '["nope"]' "$access")"
    assert_equal "$status_code" 400
    [[ "$(jq -r .error <<< "$output")" == *"permissionEpoch.secretRefs: unknown secret nope"* ]] || fail "$output"
    other='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":false}'
    signed /execute-shell "$(req sr4 '["hf"]' "$other")"
    assert_equal "$status_code" 400
    [[ "$(jq -r .error <<< "$output")" == *"secret hf may be sent to huggingface.co, which the network policy does not allow"* ]] ||
        fail "$output"
    signed /execute-shell "$(shell_request sr5 true | jq -c '.permissionEpoch.secretRefs = ["hf"]')"
    assert_equal "$status_code" 400
    [[ "$(jq -r .error <<< "$output")" == *"only through the domain-allowlist gateway"* ]] || fail "$output"
    signed /execute-shell "$(req sr6 '[1]' "$access")"
    assert_equal "$status_code" 400
    call DELETE /secrets/hf
    signed /execute-shell "$(req sr7 '["hf"]' "$access")"
    assert_equal "$status_code" 400
    ! grep -r -l S3cret "$WORK/httpd.err" || fail "the value is in the daemon's log"
}
