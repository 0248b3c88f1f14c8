#!/usr/bin/env bats
# job.bats — sbx-run in job mode against a real S3-compatible store on
# loopback (s3rver behind test/fixtures/s3-store.mjs, which enforces SigV4
# and POST policies), with grants made by the AWS SDK's presigners
# (test/fixtures/control-plane.mjs).

load helpers

NODE_MODULES="$BATS_TEST_DIRNAME/../node/node_modules"

setup_file() {
    command -v node >/dev/null && [ -d "$NODE_MODULES/s3rver" ] || return 0
    export STORE_DIR="$BATS_FILE_TMPDIR/store"
    mkdir -p "$STORE_DIR"
    node "$FIXTURES/s3-store.mjs" --dir "$STORE_DIR/data" --port-file "$STORE_DIR/port" \
        2> "$STORE_DIR/log" 3>&- &
    echo $! > "$STORE_DIR/pid"
    for _ in $(seq 300); do
        [ -s "$STORE_DIR/port" ] && break
        read -rt 0.05 <> <(:) || true
    done
    [ -s "$STORE_DIR/port" ] || { cat "$STORE_DIR/log" >&2; return 1; }
}

teardown_file() {
    if [ -f "${STORE_DIR:-/nonexistent}/pid" ]; then
        pid=$(cat "$STORE_DIR/pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; read -rt 0.05 <> <(:) || true; done
        kill -9 "$pid" 2>/dev/null || true
    fi
}

setup() {
    command -v node >/dev/null && [ -d "$NODE_MODULES/s3rver" ] ||
        skip "node and test/node/node_modules (make deps) are needed for the loopback store"
    [ "$(id -u)" -eq 0 ] || skip "job mode runs as root in its container"
    ENDPOINT="http://127.0.0.1:$(cat "$STORE_DIR/port")"
    # Beside bats' own 0700 tree: the workspace's uid must reach it.
    T=$(mktemp -d /tmp/sbx-job.XXXXXX)
    chmod 755 "$T"
    mkdir -p "$T/ws" "$T/data"
    head -c 32 /dev/urandom > "$T/key"
    chmod 600 "$T/key"
    RUN_ID="run-$BATS_TEST_NUMBER-$RANDOM"
    NONCE=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
    curl -sS -X DELETE "$ENDPOINT/__faults" > /dev/null
}

teardown() {
    [ -z "${T:-}" ] || rm -rf "$T"
}

cp() { node "$FIXTURES/control-plane.mjs" --endpoint "$ENDPOINT" "$@" 2>/dev/null; }

# request CODE [EXTRA-JSON]: the execution request the document carries.
request() {
    jq -cn --arg code "$1" --arg ws "$T/ws" --argjson extra "${2:-{\}}" \
        '{language: "shell", code: $code, workspace: $ws} + $extra' > "$T/request.json"
}

# bootstrap [control-plane bootstrap options]: writes the document; sets URL.
bootstrap() {
    URL=$(cp bootstrap --run-id "$RUN_ID" --nonce "$NONCE" --request "$T/request.json" --key-file "$T/key" "$@" |
          jq -r .bootstrapUrl)
    [ -n "$URL" ] && [ "$URL" != null ]
}

# job [sbx-run options]: sbx-run with only the three variables; events in
# $T/events, diagnostics in $T/err, the exit status in $status.
job() {
    run env -i PATH="$PATH" SBX_DATA_DIR="$T/data" MAPI_RUN_ID="${JOB_RUN_ID:-$RUN_ID}" \
        MAPI_NONCE="${JOB_NONCE:-$NONCE}" MAPI_BOOTSTRAP_URL="$URL" sbx-run "$@"
    printf '%s\n' "$output" | grep '^{"event"' > "$T/events" || true
}

# job_start OUT [sbx-run options]: the same in the background, events to
# OUT; sets JOB_PID. await_ready: the workload wrote /scratch/ready (bounded).
job_start() {
    local out=$1
    shift
    env -i PATH="$PATH" SBX_DATA_DIR="$T/data" MAPI_RUN_ID="$RUN_ID" MAPI_NONCE="$NONCE" MAPI_BOOTSTRAP_URL="$URL" \
        sbx-run "$@" > "$out" 2> "$T/err" 3>&- &
    JOB_PID=$!
}

await_ready() {
    local ready="$T/data/executions/$RUN_ID/scratch/ready"
    for _ in $(seq 400); do [ -f "$ready" ] && break; read -rt 0.05 <> <(:) || true; done
    [ -f "$ready" ]
}

keys() { cp list --prefix "runs/$RUN_ID/" | jq -r .key | sort; }

@test "a job fetches and deletes its bootstrap, uploads outputs and media byte-exact, and PUTs a manifest that verifies" {
    request 'mkdir -p /scratch/outputs/sub; echo first > /scratch/outputs/one.txt
             head -c 300000 /dev/urandom > /scratch/outputs/sub/two.bin
             head -c 5000 /dev/urandom > /scratch/media/plot.png; sbx-report media plot.png --kind image --caption "a plot"
             sha256sum /scratch/outputs/one.txt /scratch/outputs/sub/two.bin /scratch/media/plot.png > /tmp/sums
             cat /tmp/sums; echo done'
    bootstrap
    job --keep-scratch
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    # Read once: the object is gone, a second fetch gets 404.
    run ! cp get "bootstrap/$RUN_ID.json"
    [ "$status" -eq 3 ]
    run curl -s -o /dev/null -w '%{http_code}' "$URL"
    [ "$output" = 404 ]
    run keys
    assert_output "runs/$RUN_ID/manifest.json
runs/$RUN_ID/media/plot.png
runs/$RUN_ID/outputs/one.txt
runs/$RUN_ID/outputs/sub/two.bin"
    # The bucket holds exactly what the workload wrote.
    stdout=$(jq -r 'select(.event == "finished") | .result.stdout' "$T/events")
    for pair in "one.txt outputs/one.txt" "two.bin outputs/sub/two.bin" "plot.png media/plot.png"; do
        set -- $pair
        want=$(printf '%s\n' "$stdout" | awk -v f="$1" '$2 ~ "/"f"$" {print $1}')
        [ -n "$want" ]
        [ "$(cp sha256 "runs/$RUN_ID/$2")" = "$want" ]
    done
    cp get "runs/$RUN_ID/manifest.json" > "$T/manifest.json"
    run sbx-run verify --key-file "$T/key" --manifest "$T/manifest.json" "$T/events"
    [ "$status" -eq 0 ]
    [ "$(jq_out '.manifest.state + " " + (.manifest.partial|tostring) + " " + (.manifest.outputs|length|tostring)')" = "completed false 2" ]
    [ "$(jq -r '.media[0].caption + " " + .media[0].key' "$T/manifest.json")" = "a plot runs/$RUN_ID/media/plot.png" ]
    # One media event per item, one upload event per output.
    [ "$(jq -s '[.[] | select(.event == "media")] | length' "$T/events")" -eq 1 ]
    [ "$(jq -s '[.[] | select(.event == "upload" and .kind == "output")] | length' "$T/events")" -eq 2 ]
    # A changed byte breaks the manifest's MAC.
    sed 's/"completed"/"completes"/' "$T/manifest.json" > "$T/bad.json"
    run sbx-run verify --key-file "$T/key" --manifest "$T/bad.json"
    [ "$status" -eq 9 ]
}

@test "the nonce, the key and the signed URLs reach neither the workload nor the events" {
    request 'env; cat /proc/self/environ | tr "\0" "\n"; echo ok'
    bootstrap
    job
    [ "$status" -eq 0 ]
    sig=$(printf '%s' "$URL" | sed 's/.*X-Amz-Signature=//')
    key=$(base64 -w0 < "$T/key")
    for secret in "$NONCE" "$sig" "$key" MAPI_; do
        ! grep -qF -- "$secret" "$T/events"
    done
    cp get "runs/$RUN_ID/manifest.json" | { ! grep -qF -- "$sig"; }
}

@test "a wrong nonce or run id fails as integrity (9), leaves the bootstrap and uploads nothing" {
    request 'echo x > /scratch/outputs/x'
    bootstrap
    JOB_NONCE="${NONCE}x" job
    [ "$status" -eq 9 ]
    [[ "$output" == *bootstrap-mismatch* ]]
    cp get "bootstrap/$RUN_ID.json" > /dev/null
    JOB_RUN_ID="other-run" job
    [ "$status" -eq 9 ]
    run keys
    assert_output ""
}

@test "an unknown field in the document is bad input (2) naming it, after the delete, and uploads nothing" {
    request 'echo x > /scratch/outputs/x'
    bootstrap --set surprise=1
    job
    [ "$status" -eq 2 ]
    [[ "$output" == *'surprise: unknown field'* ]]
    run ! cp get "bootstrap/$RUN_ID.json"
    run keys
    assert_output ""
}

@test "expired grants fail as infra (5) before the workload runs and upload nothing" {
    request 'echo ran > /scratch/outputs/x; echo ran'
    bootstrap --expires -60 --bootstrap-expires 900
    job
    [ "$status" -eq 5 ]
    [[ "$output" == *"Request has expired"* || "$output" == *expired* ]]
    [ "$(jq -r 'select(.event == "finished") | .result.stdout' "$T/events")" = "" ]
    run keys
    assert_output ""
}

@test "a tampered manifest URL is refused by the store: infra (5), nothing uploaded" {
    request 'echo ran > /scratch/outputs/x'
    bootstrap
    doc=$(cp get "bootstrap/$RUN_ID.json")
    good=$(jq -r .uploads.manifest.url <<< "$doc")
    # One hex digit of the signature changed.
    bad=$(python3 -c 'import re,sys; u=sys.argv[1]; print(re.sub(r"(X-Amz-Signature=[0-9a-f]{10})([0-9a-f])", lambda m: m.group(1) + ("0" if m.group(2) != "0" else "1"), u))' "$good")
    [ "$bad" != "$good" ]
    bootstrap --set "uploads.manifest.url=$bad"
    job
    [ "$status" -eq 5 ]
    [[ "$output" == *SignatureDoesNotMatch* ]]
    run keys
    assert_output ""
}

@test "a 503 from the store is retried and the upload succeeds" {
    request 'echo payload > /scratch/outputs/p.txt'
    bootstrap
    curl -sS -X DELETE "$ENDPOINT/__stats" > /dev/null
    curl -sS -X POST "$ENDPOINT/__faults" -d '{"method":"POST","count":1,"status":503,"code":"SlowDown"}' > /dev/null
    job
    [ "$status" -eq 0 ]
    [ "$(cp get "runs/$RUN_ID/outputs/p.txt")" = payload ]
    # The refused POST and the one that landed.
    [ "$(curl -sS "$ENDPOINT/__stats" | jq '[.log[] | select(.method == "POST")] | map(.status) | join(",")' -r)" = "503,204" ]
}

@test "a store that keeps answering 503 fails the upload after 5 attempts: infra (5), a manifest saying so" {
    request 'echo payload > /scratch/outputs/p.txt'
    bootstrap
    curl -sS -X POST "$ENDPOINT/__faults" -d '{"method":"POST","count":50,"status":503,"code":"SlowDown"}' > /dev/null
    job
    [ "$status" -eq 5 ]
    [[ "$output" == *"HTTP 503 after 5 attempts"* ]]
    cp get "runs/$RUN_ID/manifest.json" > "$T/manifest.json"
    [ "$(jq -r '[.state, .failureClass, (.partial|tostring), (.outputs|length|tostring)] | join(" ")' "$T/manifest.json")" = "failed infra true 0" ]
}

@test "SIGTERM mid-run: the workload flushes its checkpoint, a partial manifest is PUT, exit 7 (timeout)" {
    request 'trap "echo flushed > /scratch/checkpoints/ck; sbx-report checkpoint ck; exit 143" TERM
             echo part > /scratch/outputs/part.txt; echo ready > /scratch/ready
             while :; do sleep 0.05; done'
    bootstrap
    mkfifo "$T/events.fifo"
    job_start "$T/events.fifo" --deadline-reserve-ms 20000
    pid=$JOB_PID
    exec 8< "$T/events.fifo"
    while read -r -t 30 -u 8 line; do
        printf '%s\n' "$line" >> "$T/events"
        [[ "$line" == *'"event":"started"'* ]] && break
    done
    await_ready
    kill -TERM "$pid"
    cat <&8 >> "$T/events"
    exec 8<&-
    wait "$pid" && rc=0 || rc=$?
    [ "$rc" -eq 7 ]
    cp get "runs/$RUN_ID/manifest.json" > "$T/manifest.json"
    run jq -r '[.state, (.partial|tostring), .failureClass, .deadline, (.checkpoints[0].key), (.outputs[0].key)] | join(" ")' "$T/manifest.json"
    assert_output "failed true timeout platform runs/$RUN_ID/checkpoints/ck runs/$RUN_ID/outputs/part.txt"
    [ "$(cp get "runs/$RUN_ID/checkpoints/ck")" = flushed ]
    run sbx-run verify --key-file "$T/key" --manifest "$T/manifest.json" "$T/events"
    [ "$status" -eq 0 ]
    # Scratch and the execution directory are gone.
    [ ! -e "$T/data/executions/$RUN_ID" ]
}

@test "the platform deadline stops the run a reserve early and the manifest is partial" {
    request 'echo early > /scratch/outputs/e.txt; sleep 60'
    bootstrap --deadline-ms 4000
    job --deadline-reserve-ms 1500 --grace-ms 200
    [ "$status" -eq 7 ]
    cp get "runs/$RUN_ID/manifest.json" > "$T/manifest.json"
    [ "$(jq -r '[.partial, .deadline, .outputs[0].path] | map(tostring) | join(" ")' "$T/manifest.json")" = "true platform e.txt" ]
    [ "$(jq -r 'select(.event == "finished") | .result.error' "$T/events")" = "Shell execution stopped 1500 ms before the platform deadline of 4000 ms" ]
}

@test "a FIFO, a symlink and a non-UTF-8 name in outputs are skipped without blocking; the rest uploads" {
    request 'mkfifo /scratch/outputs/pipe; ln -s /etc/shadow /scratch/outputs/shadow
             echo ok > "/scratch/outputs/$(printf "bad\377name")"; echo fine > /scratch/outputs/fine.txt'
    bootstrap
    job
    [ "$status" -eq 0 ]
    run keys
    assert_output "runs/$RUN_ID/manifest.json
runs/$RUN_ID/outputs/fine.txt"
    cp get "runs/$RUN_ID/manifest.json" | jq -e '.outputsComplete == false and .partial == true'
    grep -q '"code":"output-skipped"' "$T/events"
}

@test "a name holding \${filename} is never a key (the store would substitute it): skipped, the rest uploads" {
    request 'cd /scratch/outputs; mkdir -p d/az "d/a\${filename}"; echo GENUINE > d/az/z; echo FORGED > "d/a\${filename}/z"'
    bootstrap
    job
    [ "$status" -eq 0 ]
    [ "$(cp get "runs/$RUN_ID/outputs/d/az/z")" = GENUINE ]
    cp get "runs/$RUN_ID/manifest.json" | jq -e '(.outputs | map(.path)) == ["d/az/z"] and .partial'
}

@test "a media name that cannot be a key is skipped with a warning; later media and checkpoints still go; partial" {
    request 'cd /scratch/media; n=$(printf "bad\nname"); echo 1 > "$n"; sbx-report media "$n" --kind image
             echo 2 > good.png; sbx-report media good.png --kind image; echo ck > /scratch/checkpoints/ck; sbx-report checkpoint ck'
    bootstrap
    job
    [ "$status" -eq 0 ]
    run keys
    assert_output "runs/$RUN_ID/checkpoints/ck
runs/$RUN_ID/manifest.json
runs/$RUN_ID/media/good.png"
    cp get "runs/$RUN_ID/manifest.json" | jq -e '.partial and (.media | length) == 1'
    grep -q '"code":"output-skipped","kind":"media"' "$T/events"
}

@test "a store that never answers an upload: SIGTERM still gets a manifest written within the reserve" {
    request 'echo a > /scratch/outputs/a; echo ready > /scratch/ready; trap "" TERM; while :; do sleep 0.1; done'
    bootstrap
    curl -sS -X POST "$ENDPOINT/__faults" -d '{"method":"POST","count":5,"action":"hang"}' > /dev/null
    job_start "$T/events" --deadline-reserve-ms 4000 --grace-ms 1000
    pid=$JOB_PID
    await_ready
    kill -TERM "$pid"
    wait "$pid" && rc=0 || rc=$?
    [ "$rc" -eq 7 ]
    cp get "runs/$RUN_ID/manifest.json" > "$T/manifest.json"
    [ "$(jq -r '[.state, (.partial|tostring), .failureClass] | join(" ")' "$T/manifest.json")" = "failed true timeout" ]
}

@test "the nonce and the bootstrap URL are wiped from sbx-run's own /proc environ" {
    request 'echo ready > /scratch/ready; sleep 30'
    bootstrap
    job_start "$T/events"
    pid=$JOB_PID
    await_ready
    tr '\0' '\n' < "/proc/$pid/environ" > "$T/environ"
    kill -TERM "$pid"
    wait "$pid" || true
    grep -q SBX_DATA_DIR "$T/environ" # the read worked
    ! grep -qF -- "$NONCE" "$T/environ"
    ! grep -q 'X-Amz-Signature' "$T/environ"
}

@test "a 1 GiB output streams up with flat memory (peak RSS printed)" {
    request 'head -c 1073741824 /dev/zero > /scratch/outputs/big.bin' '{"caps":{"outputBytes":2147483648,"scratchBytes":2147483648}}'
    bootstrap
    job
    [ "$status" -eq 0 ] || { echo "$output" | tail -3; false; }
    rss=$(jq -r 'select(.event == "finished") | .result.supervisorMaxRssKiB' "$T/events")
    echo "# sbx-run peak RSS with a 1 GiB upload: $rss KiB" >&3
    # Flat: far below the file. ASan's quarantine holds up to 256 MiB of freed blocks.
    bound=65536
    ! ldd "$SBX_BIN/sbx-run" | grep -q libasan || bound=524288
    [ "$rss" -lt "$bound" ]
    want=$(head -c 1073741824 /dev/zero | sha256sum | cut -d' ' -f1)
    [ "$(cp sha256 "runs/$RUN_ID/outputs/big.bin")" = "$want" ]
    [ "$(cp get "runs/$RUN_ID/manifest.json" | jq -r '.outputs[0].sha256')" = "$want" ]
}

@test "job mode refuses a request argument, --standby and --no-snapshot, and needs MAPI_RUN_ID and MAPI_NONCE" {
    run sbx-run --bootstrap http://127.0.0.1:1/x --no-snapshot
    [ "$status" -eq 2 ]
    run env -i PATH="$PATH" MAPI_BOOTSTRAP_URL=http://127.0.0.1:1/x sbx-run
    [ "$status" -eq 2 ]
    [[ "$output" == *"MAPI_RUN_ID and MAPI_NONCE"* ]]
    # Plain http only to loopback; nothing is sent.
    run env -i PATH="$PATH" MAPI_RUN_ID=r MAPI_NONCE=n MAPI_BOOTSTRAP_URL=http://192.0.2.1/x sbx-run
    [ "$status" -eq 2 ]
    [[ "$output" == *"plain http only to loopback"* ]]
}
