#!/usr/bin/env bats
# The loopback object store (test/fixtures/s3-store.mjs) enforces what real
# S3 enforces and s3rver alone does not: presigned-URL signatures and
# expiry, POST policies (signature, expiration, conditions,
# content-length-range) with nothing stored when refused, atomic writes;
# its fault injection serves a 503 once. Driven with curl and the control
# plane (test/fixtures/control-plane.mjs).

load s3_helpers

setup() {
    s3_setup
    W="$S3_WORK/t"
    mkdir -p "$W"
    printf '{"kind":"shell","command":"true"}\n' > "$W/request.json"
    head -c 32 /dev/urandom > "$W/key.bin"
}

teardown() { s3_teardown; }

# boot [ARGS...]: a bootstrap of run r1; sets BOOT (its line) and DOC (the
# run document as stored).
boot() {
    run --separate-stderr cp_ bootstrap --run-id r1 --nonce n1 --request "$W/request.json" --key-file "$W/key.bin" "$@"
    assert_success
    BOOT=$output
    run --separate-stderr cp_ get bootstrap/r1.json
    assert_success
    DOC=$output
}

# code URL [CURL-ARGS...]: sets $status_code and $output (the body).
code() {
    local url=$1
    shift
    rm -f "$W/body"
    run --separate-stderr curl -sS -o "$W/body" -w '%{http_code}' "$@" "$url"
    status_code=$output
    output=$(cat "$W/body" 2>/dev/null || true)
}

# flip_sig URL-OR-HEX: one hex digit of the X-Amz-Signature changed.
flip_sig() {
    python3 -c '
import re, sys
s = sys.argv[1]
m = re.search(r"(?:X-Amz-Signature=)?([0-9a-f]{64})", s)
i = m.start(1) + 10
print(s[:i] + ("1" if s[i] == "0" else "0") + s[i + 1:])' "$1"
}

assert_s3_error() {
    assert_equal "$status_code" "$1"
    assert_output --partial "<Code>$2</Code>"
    [ -z "${3:-}" ] || assert_output --partial "$3"
}

keys() { cp_ list "$@" | jq -r .key; }

partials_are() { [ "$(s3_partials)" = "$1" ]; }

@test "the run document has exactly the fields the job mode reads" {
    boot --deadline-ms 5000
    assert_equal "$(jq -c 'keys' <<< "$DOC")" '["bootstrapDeleteUrl","deadlineMs","nonce","request","runId","signingKey","uploads"]'
    assert_equal "$(jq -c '.uploads | keys' <<< "$DOC")" '["checkpoints","manifest","media","outputs"]'
    assert_equal "$(jq -r .signingKey <<< "$DOC")" "$(base64 -w0 < "$W/key.bin")"
    assert_equal "$(jq -c .request <<< "$DOC")" "$(jq -c . "$W/request.json")"
    assert_equal "$(jq -r '.uploads.outputs.fields.key' <<< "$DOC")" 'runs/r1/outputs/${filename}'
    assert_equal "$(jq -r '.uploads.outputs.url' <<< "$DOC")" "$S3_ENDPOINT/runs"
    policy=$(jq -r '.uploads.media.fields.Policy' <<< "$DOC" | base64 -d)
    assert_equal "$(jq -c '.conditions[] | select(.[0]? == "starts-with")' <<< "$policy")" '["starts-with","$key","runs/r1/media/"]'
    assert_equal "$(jq -c '.conditions[] | select(.[0]? == "content-length-range")' <<< "$policy")" '["content-length-range",0,1099511627776]'
    assert_equal "$(jq -r .documentKey <<< "$BOOT") $(jq -r .runId <<< "$BOOT") $(jq -r .nonce <<< "$BOOT")" "bootstrap/r1.json r1 n1"
    # --no-checkpoints, --caps, --set and --unset.
    printf '{"gpu":false}' > "$W/caps.json"
    boot --no-checkpoints --caps "$W/caps.json" --set uploads.manifest.url=http://127.0.0.1:1/x --set bogusField=1 --unset nonce
    assert_equal "$(jq -c '[(.uploads | keys), .caps, .uploads.manifest.url, .bogusField, has("nonce")]' <<< "$DOC")" \
        '[["manifest","media","outputs"],{"gpu":false},"http://127.0.0.1:1/x",1,false]'
}

@test "presigned GET: good URL served; one signature digit changed is 403; expired is 403; unsigned is 403" {
    boot
    url=$(jq -r .bootstrapUrl <<< "$BOOT")
    code "$url"
    assert_equal "$status_code" 200
    assert_equal "$(jq -r .runId <<< "$output")" r1
    code "$(flip_sig "$url")"
    assert_s3_error 403 SignatureDoesNotMatch
    code "${url%%\?*}"
    assert_s3_error 403 AccessDenied
    # The path is signed too: the same query on another key is refused.
    code "$S3_ENDPOINT/runs/bootstrap/r2.json?${url#*\?}"
    assert_s3_error 403 SignatureDoesNotMatch
    boot --expires -60
    code "$(jq -r .bootstrapUrl <<< "$BOOT")"
    assert_s3_error 403 AccessDenied "Request has expired"
}

@test "presigned PUT of the manifest stores it byte-exact; tampered or expired it stores nothing" {
    boot
    head -c 100000 /dev/urandom > "$W/manifest.json"
    url=$(jq -r .uploads.manifest.url <<< "$DOC")
    code "$(flip_sig "$url")" -T "$W/manifest.json"
    assert_s3_error 403 SignatureDoesNotMatch
    run cp_ get runs/r1/manifest.json
    assert_equal "$status" 3
    code "$url" -T "$W/manifest.json"
    assert_equal "$status_code" 200
    assert_equal "$(cp_ sha256 runs/r1/manifest.json)" "$(sha256sum < "$W/manifest.json" | cut -d' ' -f1)"
    boot --expires -60 --bootstrap-expires 900
    code "$(jq -r .uploads.manifest.url <<< "$DOC")" -T "$W/key.bin"
    assert_s3_error 403 AccessDenied "Request has expired"
    assert_equal "$(cp_ sha256 runs/r1/manifest.json)" "$(sha256sum < "$W/manifest.json" | cut -d' ' -f1)"
}

@test "POST with the policy fields uploads byte-exact, under the granted prefix" {
    boot
    head -c 3000000 /dev/urandom > "$W/data.bin"
    s3_post "$(jq -c .uploads.outputs <<< "$DOC")" "sub dir/data.bin" "$W/data.bin"
    assert_equal "$status_code" 204
    assert_equal "$(cp_ sha256 'runs/r1/outputs/sub dir/data.bin')" "$(sha256sum < "$W/data.bin" | cut -d' ' -f1)"
    # An empty file is within [0, 2^40]; media and checkpoints grants work too.
    : > "$W/empty"
    s3_post "$(jq -c .uploads.media <<< "$DOC")" plot.png "$W/empty"
    assert_equal "$status_code" 204
    s3_post "$(jq -c .uploads.checkpoints <<< "$DOC")" step-1 "$W/data.bin"
    assert_equal "$status_code" 204
    run --separate-stderr cp_ list --prefix runs/r1/
    assert_equal "$output" "$(printf '%s\n' '{"key":"runs/r1/checkpoints/step-1","size":3000000}' \
        '{"key":"runs/r1/media/plot.png","size":0}' '{"key":"runs/r1/outputs/sub dir/data.bin","size":3000000}')"
}

@test "POST refused and nothing stored: key outside the prefix, expired policy, tampered signature, extra field" {
    boot
    printf 'payload' > "$W/f"
    grant=$(jq -c .uploads.outputs <<< "$DOC")
    s3_post "$(jq -c '.fields.key = "runs/r2/outputs/${filename}"' <<< "$grant")" f "$W/f"
    assert_s3_error 403 AccessDenied 'Invalid according to Policy: Policy Condition failed: [&#34;starts-with&#34;,&#34;$key&#34;,&#34;runs/r1/outputs/&#34;]'
    s3_post "$(jq -c '.fields.key = "runs/r1/${filename}"' <<< "$grant")" outputs2/f "$W/f"
    assert_s3_error 403 AccessDenied "Policy Condition failed"
    sig=$(jq -r '.fields["X-Amz-Signature"]' <<< "$grant")
    s3_post "$(jq -c --arg s "$(flip_sig "$sig")" '.fields["X-Amz-Signature"] = $s' <<< "$grant")" f "$W/f"
    assert_s3_error 403 SignatureDoesNotMatch
    # The policy itself changed (widened), the signature kept.
    wide=$(jq -r .fields.Policy <<< "$grant" | base64 -d | sed 's|runs/r1/outputs/|runs/|' | base64 -w0)
    s3_post "$(jq -c --arg p "$wide" '.fields.Policy = $p' <<< "$grant")" f "$W/f"
    assert_s3_error 403 SignatureDoesNotMatch
    s3_post "$grant" f "$W/f" --form-string "x-amz-meta-extra=1"
    assert_s3_error 403 AccessDenied "Extra input fields: x-amz-meta-extra"
    # No policy at all: anonymous POST to a private bucket.
    s3_post "$(jq -c '.fields |= {key}' <<< "$grant")" f "$W/f"
    assert_s3_error 403 AccessDenied
    boot --expires -60 --bootstrap-expires 900
    s3_post "$(jq -c .uploads.outputs <<< "$DOC")" f "$W/f"
    assert_s3_error 403 AccessDenied "Invalid according to Policy: Policy expired."
    assert_equal "$(keys)" "bootstrap/r1.json"
    assert_equal "$(s3_partials)" 0
}

@test "POST over content-length-range: refused mid-stream, the upstream write aborted, nothing stored" {
    boot --max-size 1048576
    head -c 1048576 /dev/urandom > "$W/exact"
    head -c 8388608 /dev/urandom > "$W/big"
    grant=$(jq -c .uploads.outputs <<< "$DOC")
    s3_post "$grant" big "$W/big"
    # Real S3's answer to a file outside content-length-range.
    assert_s3_error 400 EntityTooLarge "<MaxSizeAllowed>1048576</MaxSizeAllowed>"
    run cp_ get runs/r1/outputs/big
    assert_equal "$status" 3
    assert_equal "$(s3_partials)" 0
    s3_post "$grant" exact "$W/exact"
    assert_equal "$status_code" 204
    assert_equal "$(keys --prefix runs/)" "runs/r1/outputs/exact"
}

@test "an upload cut off mid-body stores nothing (POST and presigned PUT)" {
    boot
    grant=$(jq -c .uploads.outputs <<< "$DOC")
    url=$(jq -r .uploads.manifest.url <<< "$DOC")
    boundary=b0undary
    {
        printf -- '--%s\r\n' "$boundary"
        while IFS=$'\t' read -r k v; do
            [ "$k" != key ] || v=runs/r1/outputs/cut
            printf 'Content-Disposition: form-data; name="%s"\r\n\r\n%s\r\n--%s\r\n' "$k" "$v" "$boundary"
        done < <(jq -r '.fields | to_entries[] | [.key, .value] | @tsv' <<< "$grant")
        printf 'Content-Disposition: form-data; name="file"; filename="cut"\r\n\r\n'
        head -c 200000 /dev/zero
    } > "$W/partial-body"
    for req in post put; do
        curl -sS -X DELETE "$S3_ENDPOINT/__stats" > /dev/null
        exec 5<>"/dev/tcp/127.0.0.1/$S3_PORT"
        # A body announced as 10 MB, of which 200 kB come.
        if [ $req = post ]; then
            printf 'POST /runs HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: multipart/form-data; boundary=%s\r\n' "$S3_PORT" "$boundary" >&5
        else
            printf 'PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n' "${url#http://127.0.0.1:$S3_PORT}" "$S3_PORT" >&5
        fi
        printf 'Content-Length: 10000000\r\n\r\n' >&5
        cat "$W/partial-body" >&5
        # The store has seen the request (and a partial object exists) before
        # the connection goes.
        eventually bash -c "curl -sS '$S3_ENDPOINT/__stats' | jq -e '.log | length == 1' > /dev/null"
        eventually partials_are 1
        exec 5>&-
        eventually partials_are 0
    done
    assert_equal "$(keys)" "bootstrap/r1.json"
}

@test "a 503 injected for the next POST is served once, then the POST succeeds; drop closes the connection" {
    boot
    printf 'retry me' > "$W/f"
    grant=$(jq -c .uploads.outputs <<< "$DOC")
    curl -sS -X DELETE "$S3_ENDPOINT/__stats" > /dev/null
    s3_fault '{"method":"POST","count":1}'
    s3_post "$grant" f "$W/f"
    assert_s3_error 503 SlowDown
    assert_equal "$(keys --prefix runs/)" ""
    s3_post "$grant" f "$W/f"
    assert_equal "$status_code" 204
    assert_equal "$(cp_ sha256 runs/r1/outputs/f)" "$(sha256sum < "$W/f" | cut -d' ' -f1)"
    run s3_stats
    assert_equal "$(jq_out '.requests.POST') $(jq_out '[.log[] | select(.method == "POST") | .status] | join(",")')" "2 503,204"
    assert_equal "$(curl -sS "$S3_ENDPOINT/__faults")" "[]"
    # A dropped connection for a PUT, keyed to the manifest.
    s3_fault '{"method":"PUT","keyPrefix":"runs/r1/manifest","action":"drop"}'
    code "$(jq -r .uploads.manifest.url <<< "$DOC")" -T "$W/f"
    assert_equal "$status_code" 000
    code "$(jq -r .uploads.manifest.url <<< "$DOC")" -T "$W/f"
    assert_equal "$status_code" 200
}

@test "the DELETE URL removes the bootstrap object; get then exits 3" {
    boot
    run --separate-stderr cp_ get bootstrap/r1.json --out "$W/doc.json"
    assert_success
    assert_equal "$(jq -r .nonce "$W/doc.json")" n1
    del=$(jq -r .bootstrapDeleteUrl <<< "$DOC")
    code "$(flip_sig "$del")" -X DELETE
    assert_s3_error 403 SignatureDoesNotMatch
    code "$del" -X DELETE
    assert_equal "$status_code" 204
    run cp_ get bootstrap/r1.json
    assert_equal "$status" 3
    run cp_ sha256 bootstrap/r1.json
    assert_equal "$status" 3
    code "$(jq -r .bootstrapUrl <<< "$BOOT")"
    assert_s3_error 404 NoSuchKey
}

@test "a large POST streams through with flat memory (256 MiB; 1 GiB with SBX_S3_BIG=1)" {
    boot
    size=$(( ${SBX_S3_BIG:-0} == 1 ? 1 << 30 : 256 << 20 ))
    truncate -s "$size" "$W/big"
    s3_post "$(jq -c .uploads.outputs <<< "$DOC")" big "$W/big"
    assert_equal "$status_code" 204
    run --separate-stderr cp_ list --prefix runs/r1/outputs/
    assert_equal "$output" "{\"key\":\"runs/r1/outputs/big\",\"size\":$size}"
    # The store's peak resident set stays far below the upload's size.
    peak=$(awk '/^VmHWM:/ { print $2 }' "/proc/$S3_PID/status")
    [ "$peak" -lt 200000 ] || fail "s3-store peaked at $peak kB for a $size-byte upload"
}
