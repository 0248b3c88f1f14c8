#!/usr/bin/env bats
# The image (make image) in real podman containers: root with the runtime's
# default capabilities and masked paths (what Docker does by default), the
# Kubernetes Job's capability set, unmask=ALL, and a job in bootstrap mode
# against the loopback store (s3_helpers.bash) through --network host.
# Every podman call is bounded (timeout, and --timeout on the container);
# every container carries this run's label and is removed in teardown.

load helpers
load s3_helpers

IMAGE=localhost/sbx:latest
# runc: crun refuses hosts with hybrid cgroups; cgroupfs and file events:
# no systemd as PID 1. The ulimits: podman's defaults exceed what some VMs
# allow as hard limits.
PODMAN=(podman --runtime runc --cgroup-manager cgroupfs --events-backend file)
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

# Why the suite cannot run here ("" : it can); each test skips with it
# (a skip in setup_file fails the file under Debian's bats 1.8).
container_unusable() {
    if ! command -v podman >/dev/null; then
        echo "podman is not installed (make deps-image)"
    elif [ "$(id -u)" -ne 0 ]; then
        echo "the container suite runs root podman"
    elif ldd "$SBX_BIN/sbx-httpd" 2>/dev/null | grep -q libasan ||
        grep -qs -- -fsanitize "$BATS_TEST_DIRNAME/../../build/flags"; then
        echo "bin/ holds a SAN=1 build: the image is made of plain builds only"
    fi
}

setup() {
    local why
    why=$(container_unusable)
    if [ -n "$why" ]; then skip "$why"; fi
}

setup_file() {
    if [ -n "$(container_unusable)" ]; then return 0; fi
    # make image is incremental: the cached base, and no build when the
    # image already carries the staged tree's hash.
    local start=$SECONDS
    timeout 900 make -C "$BATS_TEST_DIRNAME/../.." --no-print-directory image 2>&1 | sed 's/^/# /' >&3
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail "make image failed"
    echo "# make image took $((SECONDS - start)) s" >&3
    export CT_LABEL="sbx-test=container-$$-$RANDOM"
}

teardown() {
    remove_containers
    s3_teardown
}

teardown_file() {
    remove_containers
}

remove_containers() {
    if [ -n "${CT_LABEL:-}" ]; then
        "${PODMAN[@]}" ps -aq --filter "label=$CT_LABEL" | xargs -r timeout 60 "${PODMAN[@]}" rm -f -t 0 >/dev/null 2>&1 || true
    fi
}

# ctr [PODMAN-RUN-OPTIONS...] -- CMD...: runs CMD in a fresh container of
# the image, removed at exit, killed after 60 s.
ctr() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    timeout 90 "${PODMAN[@]}" run --rm --timeout 60 --label "$CT_LABEL" "${LIMITS[@]}" \
        "${opts[@]}" "$IMAGE" "$@"
}

@test "a default container: root without CAP_DAC_READ_SEARCH or CAP_SYS_ADMIN, /proc masked" {
    run ctr --network none -- sh -c 'id -u; grep ^CapEff /proc/self/status; grep -c "^proc /proc/sys proc ro," /proc/self/mounts'
    assert_success
    assert_line -n 0 0
    eff=$((16#$(awk '{ print $2 }' <<<"${lines[1]}")))
    [ $((eff >> 2 & 1)) -eq 0 ]  # CAP_DAC_READ_SEARCH
    [ $((eff >> 21 & 1)) -eq 0 ] # CAP_SYS_ADMIN
    [ $((eff >> 0 & 1)) -eq 1 ]  # CAP_CHOWN
    assert_line -n 2 1           # /proc/sys read-only: the masked shape
}

@test "a default container: sbx-probe reports the /proc fallback with its remedy" {
    run --separate-stderr ctr --network none -- sbx-probe --no-cache
    assert_success
    assert_equal "$(jq_out .usable)" true
    assert_equal "$(jq_out .procMode)" bind
    assert_equal "$(jq_out .procFallback)" true
    assert_equal "$(jq_out .reason)" option-rejected
    assert_equal "$(jq_out '.warnings[] | select(.code == "proc-fallback") | .code')" proc-fallback
    [[ "$(jq_out '.warnings[] | select(.code == "proc-fallback") | .message')" == *"Falling back to --ro-bind /proc /proc"* ]]
    [[ "$(jq_out '.warnings[] | select(.code == "proc-fallback") | .remedy')" == *"systempaths=unconfined"* ]]
    [[ "$stderr" == *'"code":"proc-fallback"'* ]]
}

@test "unmask=ALL, and the compose file's systempaths=unconfined: sbx-probe reports a fresh /proc" {
    run --separate-stderr ctr --network none --security-opt unmask=ALL -- sbx-probe --no-cache
    assert_success
    assert_equal "$(jq_out .procMode)" new
    assert_equal "$(jq_out .procFallback)" false
    assert_equal "$(jq_out .reason)" supported
    assert_equal "$(jq_out '[.warnings[].code] | index("proc-fallback")')" null
    # contrib/compose/sbx-httpd.yaml's security_opt, as podman-compose passes it
    # (seccomp relative to the compose file), not privileged: the same.
    local compose=$BATS_TEST_DIRNAME/../../contrib/compose opts=()
    while read -r o; do opts+=(--security-opt "$o"); done < <(cd "$compose" &&
        python3 -c 'import os, yaml; [print(o if not o.startswith("seccomp=") else "seccomp=" + os.path.abspath(o[8:]))
                    for o in yaml.safe_load(open("sbx-httpd.yaml"))["services"]["sbx-httpd"]["security_opt"]]')
    [ "${#opts[@]}" -eq 6 ]
    run --separate-stderr ctr --network none "${opts[@]}" -- sbx-probe --no-cache
    assert_success
    assert_equal "$(jq_out '.procMode + " " + .reason')" "new supported"
}

@test "a default container: sbx-launch runs the workload as the dedicated uid 10001" {
    run ctr --network none -- sh -c 'getent passwd sbx | cut -d: -f3,4
        mkdir -m 0777 /ws
        echo "{\"argv\":[\"/bin/sh\",\"-c\",\"id -u; id -g; echo made > f\"],\"workspace\":\"/ws\",\"network\":{\"mode\":\"none\"}}" |
            sbx-launch - 2>/dev/null
        echo "rc=$?"; stat -c %u /ws/f'
    assert_success
    assert_output "$(printf '10001:10001\n10001\n10001\nrc=0\n10001')"
}

# RUN_SCRIPT: a shell and a python execution with sbx-run, their signed
# events verified; prints what check_runs checks.
RUN_SCRIPT='set -e
mkdir -m 0777 /ws; mkdir -m 0755 /st; (umask 077; head -c 32 /dev/urandom > /key)
run() { jq -cn --arg id "$1" --arg lang "$2" --arg code "$3" "{executionId: \$id, language: \$lang, code: \$code, workspace: \"/ws\"}" |
    sbx-run --state-dir /st/state --signing-key-file /key - > /st/$1.ev 2>>/st/err || echo "sbx-run $1 exit $?"
    sbx-run verify --key-file /key /st/$1.ev | jq -c .ok
    jq -c "select(.event == \"finished\") | .result | {exitCode, stdout, workspaceUid}" /st/$1.ev
    jq -c "select(.event == \"mode\") | [.missingCapabilities[]?.capability]" /st/$1.ev; }
run sh1 shell "id -u; echo hi > made.txt; echo done"
run py1 python "import os; print(os.getuid() == os.stat(\"made.txt\").st_uid, open(\"made.txt\").read().strip())"
cat /st/err >&2'

# check_runs MISSING: $output of RUN_SCRIPT; MISSING, the capabilities the
# mode event lists.
check_runs() {
    assert_line -n 0 true
    uid=$(jq -r .workspaceUid <<<"${lines[1]}")
    [ "$uid" -gt 0 ]
    assert_equal "$(jq -c 'del(.workspaceUid)' <<<"${lines[1]}")" "{\"exitCode\":0,\"stdout\":\"$uid\\ndone\\n\"}"
    assert_line -n 2 "$1"
    assert_line -n 3 true
    assert_equal "${lines[4]}" "{\"exitCode\":0,\"stdout\":\"True hi\\n\",\"workspaceUid\":$uid}"
    assert_equal "${#lines[@]}" 6
}

@test "a default container: sbx-run runs shell and python as the workspace's uid without CAP_DAC_READ_SEARCH" {
    run --separate-stderr ctr --network none -- sh -c "$RUN_SCRIPT"
    assert_success
    check_runs '["CAP_DAC_READ_SEARCH","CAP_SYS_ADMIN"]'
    [[ "$stderr" == *'"code":"capability-missing"'*CAP_DAC_READ_SEARCH* ]]
}

@test "the Kubernetes Job's shape (contrib/kubernetes/sbx-job.yaml): a python job in bootstrap mode" {
    # As the Job's securityContext asks: only the 7 capabilities sbx-run
    # uses, no-new-privileges (allowPrivilegeEscalation: false), a
    # read-only root with the emptyDirs, /proc unmasked (procMount
    # Unmasked), the workspace uids inside a pod user namespace's 65536.
    s3_setup
    local dir=$BATS_TEST_TMPDIR/job run_id=ct-k8s-$RANDOM
    mkdir -m 0755 "$dir" "$dir/state" "$dir/workspace" "$dir/tmp"
    (umask 077 && head -c 32 /dev/urandom > "$dir/key")
    jq -cn '{language: "python", workspace: "/workspace", code: "import os
open(\"/scratch/outputs/uid.txt\", \"w\").write(str(os.getuid()))
print(os.getuid(), os.path.exists(\"/proc/self/status\"))"}' > "$dir/request.json"
    url=$(cp_ bootstrap --run-id "$run_id" --nonce n1 --request "$dir/request.json" --key-file "$dir/key" | jq -r .bootstrapUrl)
    run --separate-stderr ctr --network host --read-only --read-only-tmpfs=false \
        -v "$dir/state:/var/lib/sbx" -v "$dir/workspace:/workspace" -v "$dir/tmp:/tmp" \
        --cap-drop ALL --cap-add CHOWN,DAC_OVERRIDE,FOWNER,KILL,SETGID,SETUID,SETPCAP \
        --security-opt no-new-privileges --security-opt unmask=ALL \
        -e SBX_DATA_DIR=/var/lib/sbx -e SBX_UID_RANGE=20000-65000 \
        -e MAPI_RUN_ID="$run_id" -e MAPI_NONCE=n1 -e MAPI_BOOTSTRAP_URL="$url" -- sbx-run
    [ "$status" -eq 0 ] || fail "sbx-run exit $status: $stderr"
    result=$(grep '^{"event":"finished"' <<<"$output" | jq -c .result)
    uid=$(jq -r .workspaceUid <<<"$result")
    [ "$uid" -ge 20000 ] && [ "$uid" -le 65000 ]
    assert_equal "$(jq -r .stdout <<<"$result")" "$uid True"
    assert_equal "$(stat -c %u "$dir/workspace")" "$uid"
    cp_ get "runs/$run_id/outputs/uid.txt" > "$dir/uid.txt"
    assert_equal "$(cat "$dir/uid.txt")" "$uid"
    assert_equal "$(cp_ get "runs/$run_id/manifest.json" | jq -c '[.state, .partial]')" '["completed",false]'
}

@test "without CAP_SETUID sbx-run refuses with exit 4 and a remedy naming it" {
    run --separate-stderr ctr --network none --cap-drop SETUID -- sh -c \
        'mkdir -m 0777 /ws; echo "{\"executionId\":\"e1\",\"language\":\"shell\",\"code\":\"id\",\"workspace\":\"/ws\"}" | sbx-run --state-dir /st -'
    assert_failure 4
    [[ "$stderr" == *'"code":"capability-missing"'*"--cap-add SETUID"* ]]
}

@test "a default container: sbx-httpd serves a signed /execute-shell" {
    local dir=$BATS_TEST_TMPDIR/ready name=sbx-ct-httpd-$$-$RANDOM
    mkdir -m 0755 "$dir"
    # The server listens on the host's loopback (--network host) on a port
    # the kernel picks, written to the ready file once it listens.
    "${PODMAN[@]}" run -d --rm --timeout 120 --name "$name" --label "$CT_LABEL" "${LIMITS[@]}" \
        --network host -v "$dir:/ready" -e SCIENCE_AGENT_RUNNER_TOKEN=ct-token \
        -e SCIENCE_AGENT_RUNNER_PORT=0 -e SCIENTIFIC_ENVS=0 "$IMAGE" \
        sh -c 'mkdir -p -m 0777 /var/lib/sbx-httpd/projects/demo &&
               exec sbx-httpd --ready-fd 3 3>/ready/ready.tmp 2>/ready/err' >/dev/null
    for _ in $(seq 300); do
        [ -s "$dir/ready.tmp" ] && break
        read -rt 0.1 <> <(:) || true
    done
    port=$(jq -r .port "$dir/ready.tmp")
    [ -n "$port" ] || fail "sbx-httpd did not start: $(cat "$dir/err")"
    body=$(jq -cn '{agentId: "main", executionId: "ct-1", code: "id -u; echo hello from the container",
        workspaceRoot: "/var/lib/sbx-httpd/projects/demo",
        permissionEpoch: {sessionId: "s1", mounts: [{source: "workspace", mode: "read-write"}], networkPolicy: "none"}}')
    ts=$(date +%s%3N)
    sig=$(printf '%s\n%s' "$ts" "$(printf %s "$body" | sha256sum | cut -d' ' -f1)" |
          openssl dgst -sha256 -hmac ct-token -r | cut -d' ' -f1)
    run curl -sS --max-time 60 "http://127.0.0.1:$port/execute-shell" -H "authorization: Bearer ct-token" \
        -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" --data-binary "$body"
    assert_success
    assert_equal "$(jq_out .exitCode)" 0
    uid=$(jq_out '.stdout | split("\n")[0]')
    [ "$uid" -gt 0 ]
    assert_equal "$(jq_out .stdout)" "$(printf '%s\nhello from the container' "$uid")"
    run curl -sS --max-time 10 "http://127.0.0.1:$port/health"
    assert_equal "$(jq_out .status)" ok
    grep -q '"code":"capability-missing".*CAP_DAC_READ_SEARCH' "$dir/err"
}

@test "a default container: sbx-run in bootstrap mode against the loopback store" {
    s3_setup
    local dir=$BATS_TEST_TMPDIR/job run_id=ct-run-$RANDOM nonce
    mkdir -m 0755 "$dir"
    nonce=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
    (umask 077 && head -c 32 /dev/urandom > "$dir/key")
    jq -cn '{language: "shell", workspace: "/ws", code: "id -u; echo first > /scratch/outputs/one.txt
        head -c 5000 /dev/urandom > /scratch/media/plot.png; sbx-report media plot.png --kind image
        sha256sum /scratch/outputs/one.txt /scratch/media/plot.png; echo done"}' > "$dir/request.json"
    url=$(cp_ bootstrap --run-id "$run_id" --nonce "$nonce" --request "$dir/request.json" --key-file "$dir/key" |
          jq -r .bootstrapUrl)
    [[ "$url" == http://127.0.0.1:* ]]
    # --network host: the container's loopback is the host's, where the store is.
    run --separate-stderr ctr --network host -e MAPI_RUN_ID="$run_id" -e MAPI_NONCE="$nonce" \
        -e MAPI_BOOTSTRAP_URL="$url" -- sh -c 'mkdir -m 0777 /ws && exec sbx-run'
    [ "$status" -eq 0 ] || fail "sbx-run exit $status: $stderr"
    printf '%s\n' "$output" | grep '^{"event"' > "$dir/events"
    # The bootstrap was deleted; outputs and media are byte-exact in the bucket.
    assert_equal "$(curl -s -o /dev/null -w '%{http_code}' "$url")" 404
    run cp_ list --prefix "runs/$run_id/"
    assert_equal "$(jq -r .key <<<"$output" | sort | tr '\n' ' ')" \
        "runs/$run_id/manifest.json runs/$run_id/media/plot.png runs/$run_id/outputs/one.txt "
    result=$(jq -c 'select(.event == "finished") | .result' "$dir/events")
    uid=$(jq -r .workspaceUid <<<"$result")
    [ "$uid" -gt 0 ]
    stdout=$(jq -r .stdout <<<"$result")
    assert_equal "$(head -1 <<<"$stdout")" "$uid"
    assert_equal "$(cp_ sha256 "runs/$run_id/outputs/one.txt")" "$(awk '/one.txt$/ { print $1 }' <<<"$stdout")"
    assert_equal "$(cp_ sha256 "runs/$run_id/media/plot.png")" "$(awk '/plot.png$/ { print $1 }' <<<"$stdout")"
    cp_ get "runs/$run_id/manifest.json" > "$dir/manifest.json"
    run sbx-run verify --key-file "$dir/key" --manifest "$dir/manifest.json" "$dir/events"
    assert_success
    assert_equal "$(jq -r '.state + " " + (.partial | tostring)' "$dir/manifest.json")" "completed false"
}

@test "where the runtime's seccomp profile refuses user namespaces: sbx-probe says so (exit 4), a job ends infra (exit 4) with a failed manifest" {
    # What containerd's and Docker's RuntimeDefault do without CAP_SYS_ADMIN:
    # unshare and clone with CLONE_NEWUSER refused (clone3 unavailable).
    cat > "$BATS_TEST_TMPDIR/no-userns.json" <<'JSON'
{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
  {"names": ["unshare"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
  {"names": ["clone"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
   "args": [{"index": 0, "value": 268435456, "valueTwo": 268435456, "op": "SCMP_CMP_MASKED_EQ"}]},
  {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]}
JSON
    run --separate-stderr ctr --network none --security-opt seccomp="$BATS_TEST_TMPDIR/no-userns.json" -- sbx-probe --no-cache
    assert_failure 4
    assert_equal "$(jq_out .usable)" false
    assert_equal "$(jq_out '.warnings[0].code')" sandbox-unusable
    s3_setup
    local dir=$BATS_TEST_TMPDIR/job run_id=ct-nouserns-$RANDOM
    mkdir -m 0755 "$dir"
    (umask 077 && head -c 32 /dev/urandom > "$dir/key")
    jq -cn '{language: "shell", workspace: "/ws", code: "echo x > /scratch/outputs/one.txt"}' > "$dir/request.json"
    url=$(cp_ bootstrap --run-id "$run_id" --nonce n1 --request "$dir/request.json" --key-file "$dir/key" | jq -r .bootstrapUrl)
    run --separate-stderr ctr --network host --security-opt seccomp="$BATS_TEST_TMPDIR/no-userns.json" \
        -e MAPI_RUN_ID="$run_id" -e MAPI_NONCE=n1 -e MAPI_BOOTSTRAP_URL="$url" -- sh -c 'mkdir -m 0777 /ws && exec sbx-run'
    assert_equal "$status" 4
    [[ "$stderr" == *'"code":"infra"'*"cannot sandbox"* ]]
    run cp_ list --prefix "runs/$run_id/"
    assert_output "{\"key\":\"runs/$run_id/manifest.json\",\"size\":$(jq -r .size <<<"$output")}"
    assert_equal "$(cp_ get "runs/$run_id/manifest.json" | jq -c '[.state, .partial, .failureClass]')" '["failed",true,"infra"]'
}
