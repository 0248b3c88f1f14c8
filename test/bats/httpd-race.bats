#!/usr/bin/env bats
# The trust boundary under attack (issue 16): a workload that swaps a
# directory of its workspace for a symlink to a host directory, in a loop
# or once while an execution waits in line, never makes the runner read,
# write, list, chown or bind anything outside the roots; held skill
# packages cannot be rewritten through an execution; set-uid bits go.

load httpd_helpers

setup() {
    httpd_setup
    # The host directory the attacker wants: only its owner may enter it.
    SECRET="$WORK/secret"
    mkdir -p "$SECRET"
    echo "top secret $$" > "$SECRET/secret.txt"
    chmod 700 "$SECRET"
    secret_before=$(secret_state)
    owner="sessionId=s1&agentId=main"
}

teardown() {
    [ -z "${RACER_DIR:-}" ] || touch "$RACER_DIR/stop" 2>/dev/null || true
    httpd_teardown
}

# Everything about the secret directory an attack could change.
secret_state() {
    stat -c '%u:%g %a %y %z %n' "$SECRET" "$SECRET"/* && ls -lA --time-style=+%s.%N "$SECRET"
}

# wait_done ID: until the managed execution has ended.
wait_done() { wait_state "$1" completed failed cancelled; }

@test "a queued execution whose workspace path is redirected while it waits runs on the original directory" {
    q="$PROJECT/q"
    mkdir -p "$q" && chmod 777 "$q"
    mkfifo "$q/up.fifo" "$q/go.fifo" && chmod 666 "$q"/*.fifo
    jq_ws() { jq -c --arg ws "$q" '.workspaceRoot = $ws'; }
    signed /shell-executions "$(shell_request hold 'echo up > up.fifo; cat go.fifo > /dev/null' | jq_ws)"
    assert_equal "$status_code" 202
    timeout 60 cat "$q/up.fifo" > /dev/null # the first run holds the workspace
    signed /shell-executions "$(shell_request victim 'echo ran > marker; id -u > uid' | jq_ws)"
    assert_equal "$status_code $(jq_out .state)" "202 queued"
    # The attack: the queued run's path now leads to the host directory.
    mv "$q" "$PROJECT/q.orig"
    ln -s "$SECRET" "$q"
    echo go > "$PROJECT/q.orig/go.fifo"
    wait_done hold
    wait_done victim
    wait_state victim completed
    assert_equal "$(cat "$PROJECT/q.orig/marker")" ran
    assert_equal "$(secret_state)" "$secret_before"
}

@test "RENAME_EXCHANGE of a directory and a symlink, in a loop, while executions hammer the path: nothing outside is touched" {
    RACER_DIR="$PROJECT"
    mkdir "$PROJECT/sub" && chmod 777 "$PROJECT/sub"
    ln -s "$SECRET" "$PROJECT/link"
    cp "$FIXTURES/exchange-racer.py" "$PROJECT/racer.py"
    mkfifo "$PROJECT/ready.fifo" && chmod 666 "$PROJECT/ready.fifo"
    signed /shell-executions "$(shell_request racer 'python3 racer.py sub link ready.fifo stop 120')"
    assert_equal "$status_code" 202
    timeout 60 cat "$PROJECT/ready.fifo" > /dev/null
    local ran=0 refused=0 lost=0 i
    for i in $(seq 150); do
        # Distinct agents: each request is its own turn, none waits for the racer.
        signed /execute-shell "$(shell_request "h$i" "echo $i > canary-$i; cat secret.txt 2>/dev/null || true" |
            jq -c --arg ws "$PROJECT/sub" --arg a "agent-$i" '.workspaceRoot = $ws | .agentId = $a')"
        case $status_code in
        200)
            refute_output --partial "top secret"
            assert_equal "$(jq_out .exitCode)" 0
            ran=$((ran + 1)) ;;
        400)
            case $(jq_out .error) in
            "Runner workspace path must not contain symbolic links") refused=$((refused + 1)) ;;
            # The name moved between the open and bwrap's mount, which bwrap
            # checks against the fd: the sandbox never started.
            "the sandbox did not start: "*) lost=$((lost + 1)) ;;
            *) fail "attempt $i: $output" ;;
            esac ;;
        *) fail "attempt $i: $status_code $output" ;;
        esac
    done
    touch "$PROJECT/stop"
    wait_done racer
    echo "# $ran ran, $refused refused, $lost lost the race inside bwrap" >&3
    # Unraced, the same request runs (so the refusals above were the race's).
    signed /execute-shell "$(shell_request after 'echo after > canary-after' |
        jq -c --arg ws "$PROJECT/sub" '.workspaceRoot = $ws | .agentId = "agent-after"')"
    assert_equal "$status_code $(jq_out .exitCode)" "200 0"
    ran=$((ran + 1))
    assert_equal "$(secret_state)" "$secret_before"
    # Every canary landed in the real directory, whatever its name was then.
    canaries=$(find "$PROJECT/sub/" -maxdepth 1 -name 'canary-*' | wc -l)
    [ "$canaries" -eq "$ran" ] || fail "$ran ran, $canaries canaries: $(ls "$PROJECT/sub" "$PROJECT")"
}

@test "a workspaceRoot that names runner-owned state is refused; held skill packages are verified before they are served" {
    signed /execute-shell "$(jq -c --arg ws "$PROJECT/../.skill-packages" '.workspaceRoot = $ws' <<<"$(shell_request o1 'true')")"
    assert_equal "$status_code $(jq_out .error)" "400 Runner workspace path must not contain '.' or '..' segments"
    mkdir -p "$WORK/data/projects/.hidden"
    signed /execute-shell "$(jq -c --arg ws "$WORK/data/projects/.hidden" '.workspaceRoot = $ws' <<<"$(shell_request o2 'true')")"
    assert_equal "$status_code $(jq_out .error)" "400 Runner workspace must not be a runner-owned directory"
    bundle=$(skill_bundle "SKILL.md=# Demo" "run.sh=echo genuine")
    api POST /skill-packages --data-binary "$bundle"
    root=$(jq_out .root)
    [[ "$root" != "$WORK/data/projects/"* ]] || fail "the store is inside projects: $root"
    signed /execute-shell "$(jq -c --arg ws "$root" '.workspaceRoot = $ws' <<<"$(shell_request o3 'echo evil > /workspace/demo/run.sh')")"
    assert_equal "$status_code $(jq_out .error)" "400 Runner workspace must be inside the configured projects or remote-workspaces directory"
    signed /execute-shell "$(shell_request o4 'cat /skills/demo/run.sh; echo ext > /skill-extensions/x' "{\"skillPackagesRoot\": \"$root\"}")"
    assert_equal "$status_code $(jq_out .stdout)" "200 echo genuine"
    # A store changed behind the runner's back is not served as held...
    echo evil > "$root/demo/run.sh"
    signed /execute-shell "$(shell_request o5 'cat /skills/demo/run.sh' "{\"skillPackagesRoot\": \"$root\"}")"
    assert_equal "$status_code $(jq_out .error)" "400 skillPackagesRoot failed its integrity check; upload the package again"
    api GET "/skill-packages/$(basename "$root")"
    assert_equal "$(jq -c 'has("root")' <<<"$output")" false
    # ...and uploading the genuine package again repairs it.
    api POST /skill-packages --data-binary "$bundle"
    assert_equal "$status_code $(jq_out .root)" "200 $root"
    signed /execute-shell "$(shell_request o6 'cat /skills/demo/run.sh' "{\"skillPackagesRoot\": \"$root\"}")"
    assert_equal "$status_code $(jq_out .stdout)" "200 echo genuine"
}

@test "a set-uid or set-gid file a workload leaves has neither bit after the run" {
    signed /execute-shell "$(shell_request s1 'cp /usr/bin/true su; chmod 6755 su; mkdir -p d; cp su d/sg; chmod 2755 d/sg; stat -c %a su')"
    assert_equal "$status_code $(jq_out .stdout)" "200 6755"
    assert_equal "$(stat -c %a "$PROJECT/su") $(stat -c %a "$PROJECT/d/sg")" "755 755"
}
