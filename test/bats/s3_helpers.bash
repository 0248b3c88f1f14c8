# s3_helpers.bash — the loopback object store (test/fixtures/s3-store.mjs)
# and the control plane (test/fixtures/control-plane.mjs) for suites that
# need them: s3_setup in setup, s3_teardown in teardown.
load helpers

NODE_PREFIX="$(cd "$BATS_TEST_DIRNAME/../node" && pwd)"

# s3_require: skips the test when node or test/node/node_modules is missing.
s3_require() {
    command -v node > /dev/null || skip "node is not installed (mk/deps.sh installs it)"
    [ -d "$NODE_PREFIX/node_modules/s3rver" ] && [ -d "$NODE_PREFIX/node_modules/@aws-sdk/client-s3" ] ||
        skip "test/node/node_modules is missing: run mk/deps.sh (npm ci --prefix test/node)"
}

# s3_setup: a fresh store under $S3_WORK; sets S3_PID, S3_PORT, S3_ENDPOINT.
s3_setup() {
    s3_require
    S3_WORK="$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/s3.XXXXXX")"
    node "$FIXTURES/s3-store.mjs" --dir "$S3_WORK/store" --port-file "$S3_WORK/port" \
        3>&- 2>>"$S3_WORK/store.err" &
    S3_PID=$!
    # Bounded wait for the port file (written atomically once listening).
    local _
    for _ in $(seq 500); do
        [ -s "$S3_WORK/port" ] && break
        kill -0 "$S3_PID" 2>/dev/null || { cat "$S3_WORK/store.err" >&2; fail "s3-store exited before listening"; }
        read -rt 0.02 <> <(:) || true
    done
    [ -s "$S3_WORK/port" ] || fail "s3-store did not listen within 10 s"
    S3_PORT=$(cat "$S3_WORK/port")
    S3_ENDPOINT="http://127.0.0.1:$S3_PORT"
    export S3_ENDPOINT
}

# s3_teardown: stops the store and waits for it.
s3_teardown() {
    if [ -n "${S3_PID:-}" ]; then
        kill -TERM "$S3_PID" 2>/dev/null || true
        wait "$S3_PID" 2>/dev/null || true
        S3_PID=
    fi
}

# cp_ ARGS...: the control plane against the store.
cp_() {
    node "$FIXTURES/control-plane.mjs" --endpoint "$S3_ENDPOINT" "$@"
}

# s3_fault JSON: adds fault rules (see the top of s3-store.mjs).
s3_fault() {
    curl -sS -f -o /dev/null -X POST --data-binary "$1" "$S3_ENDPOINT/__faults"
}

# s3_stats: the per-method counters and the request log, as JSON.
s3_stats() {
    curl -sS -f "$S3_ENDPOINT/__stats"
}

# s3_partials: how many half-written objects the store holds right now.
s3_partials() {
    find "$S3_WORK/store" -name '*._S3rver_partial-*' | wc -l
}

# s3_post GRANT-JSON RELPATH FILE [CURL-ARGS...]: what the uploader does with
# (CURL-ARGS go before the file part: extra form fields land there)
# one uploads.* grant: the fields in order (${filename} in key replaced by
# RELPATH), the file last. Sets $status_code and $output (the body).
s3_post() {
    local grant=$1 rel=$2 file=$3 k v
    shift 3
    local -a form=()
    while IFS=$'\t' read -r k v; do
        [ "$k" != key ] || v=${v//'${filename}'/$rel}
        form+=(--form-string "$k=$v")
    done < <(jq -r '.fields | to_entries[] | [.key, .value] | @tsv' <<< "$grant")
    rm -f "$S3_WORK/body"
    run --separate-stderr curl -sS -o "$S3_WORK/body" -w '%{http_code}' "${form[@]}" "$@" -F "file=@$file" "$(jq -r .url <<< "$grant")"
    status_code=$output
    output=$(cat "$S3_WORK/body" 2>/dev/null || true)
}
