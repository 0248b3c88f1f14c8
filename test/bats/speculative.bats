#!/usr/bin/env bats
# Speculative runs: the workload changes its workspace through an overlay,
# the result carries the change set, and the pending change is committed
# (under the lease, refused when the workspace changed since), discarded
# or swept when it expires; a hostile change set writes nothing outside
# the workspace, no set-id bit and nothing of another owner. Over HTTP too.

load httpd_helpers

setup() {
    launch_setup
    STATE="$WORK/state"
}

teardown() {
    [ -z "${LEASE_PID:-}" ] || kill "$LEASE_PID" 2>/dev/null || true
    [ -z "${HTTPD_PID:-}" ] || httpd_stop
    # A change a failed test left pending: overlayfs made its work/work 000.
    find "$WORK" -type d -perm 000 -exec chmod 700 {} + 2>/dev/null || true
    launch_teardown
}

# spec_run ID CODE [EXTRA-JSON]: a speculative shell run of $WS; $result
# is its result, $pending its speculative part.
spec_run() {
    local req
    req=$(jq -cn --arg id "$1" --arg code "$2" --arg ws "$WS" --argjson extra "${3:-{\"speculative\": true\}}" \
        '{executionId: $id, language: "shell", code: $code, workspace: $ws} + $extra')
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$req"
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    pending=$(jq -c .speculative <<<"$result")
}

# tree_sum DIR: every entry's path, type, mode and content digest (not its
# owner: a run as root hands the workspace to its uid first).
tree_sum() {
    (cd "$1" && find . -printf '%p %y %m\n' | sort && find . -type f -print0 | sort -z | xargs -0r sha256sum)
}

# changed PENDING CHANGE: the paths of that kind of change, sorted, one line.
changed() {
    jq -r --arg c "$2" '[.changes[] | select(.change == $c) | .path] | join(" ")' <<<"$1"
}

@test "a speculative rm -rf leaves the workspace intact and lists every deletion; discard keeps it, commit removes it" {
    mkdir -p "$WS/d/e"
    echo one > "$WS/a"
    echo two > "$WS/d/f"
    echo three > "$WS/d/e/g"
    before=$(tree_sum "$WS")
    spec_run s1 'rm -rf ./* && ls -A | wc -l'
    assert_success
    [ "$(jq -r .stdout <<<"$result")" = 0 ] # the workload saw it empty
    [ "$(tree_sum "$WS")" = "$before" ]    # the workspace did not change
    [ "$(jq -r .state <<<"$pending")" = pending ]
    [ "$(changed "$pending" deleted)" = "a d d/e d/e/g d/f" ]
    [ "$(jq -c .counts <<<"$pending")" = '{"created":0,"modified":0,"deleted":5,"typeChanged":0,"skipped":0}' ]
    # The full change set is beside the result.
    [ "$(jq -c '.changes | length' "$STATE/s1/changes.json")" = 5 ]
    # Discarded: the workspace as it was, the change gone, said once.
    run sbx-run discard "$STATE/s1"
    assert_success
    [ "$(jq -r .state <<<"$output")" = discarded ]
    [ "$(tree_sum "$WS")" = "$before" ]
    [ ! -e "$STATE/s1/speculative" ]
    run --separate-stderr sbx-run commit "$STATE/s1"
    assert_failure 3
    [[ "$stderr" == *not-pending* ]]
    # The same run again, committed: every deletion happens.
    spec_run s2 'rm -rf ./*'
    assert_success
    [ "$(tree_sum "$WS")" = "$before" ]
    run sbx-run commit "$STATE/s2"
    assert_success
    [ "$(jq -r .state <<<"$output")" = committed ]
    [ "$(jq -r .applied.removed <<<"$output")" = 2 ]
    [ -z "$(ls -A "$WS")" ]
    [ "$(jq -r .state "$STATE/s2/pending.json")" = committed ]
    [ ! -e "$STATE/s2/speculative" ]
}

@test "the change set: created, modified, type changes and deletions, with sizes and digests; the commit writes exactly them" {
    mkdir -p "$WS/dir" "$WS/keep"
    echo old > "$WS/mod"
    echo file > "$WS/was-file"
    echo inner > "$WS/dir/inner"
    echo stays > "$WS/keep/stays"
    spec_run c1 'echo new > mod; echo made > made; rm was-file; mkdir was-file; rm -r dir; echo now-a-file > dir; rm -r keep; mkdir keep; echo fresh > keep/fresh'
    assert_success
    [ "$(changed "$pending" created)" = "keep/fresh made" ]
    [ "$(changed "$pending" modified)" = mod ]
    [ "$(changed "$pending" typeChanged)" = "dir was-file" ]
    # keep/ was replaced by a new directory (opaque): what it held is deleted.
    [ "$(changed "$pending" deleted)" = "dir/inner keep/stays" ]
    [ "$(jq -r '.changes[] | select(.path == "mod") | [.size, .sha256, .previous.size, .previous.sha256] | join(" ")' <<<"$pending")" = \
        "4 $(printf 'new\n' | sha256sum | cut -d' ' -f1) 4 $(printf 'old\n' | sha256sum | cut -d' ' -f1)" ]
    [ "$(jq -r '.changes[] | select(.path == "dir") | .type + " " + .previous.type' <<<"$pending")" = "file dir" ]
    run sbx-run commit "$STATE/c1"
    assert_success
    [ "$(cat "$WS/mod")" = new ] && [ "$(cat "$WS/made")" = made ] && [ "$(cat "$WS/dir")" = now-a-file ]
    [ -d "$WS/was-file" ] && [ -z "$(ls -A "$WS/was-file")" ]
    [ "$(ls -A "$WS/keep")" = fresh ]
    [ -z "$(find "$WS" -name '.sbx-commit-*')" ]
}

@test "a hostile change set (a symlink out, a hard link, a fifo, a set-uid file, a whiteout over a directory) commits only inside the workspace" {
    mkdir -p "$WS/victim" "$WORK/outside"
    echo precious > "$WS/victim/file"
    echo host > "$WORK/outside/host-file"
    host_before=$(tree_sum "$WORK/outside")
    passwd_before=$(sha256sum /etc/passwd)
    spec_run h1 "ln -s /etc/passwd to-host; ln -s $WORK/outside escape; echo data > h1; ln h1 h2; mkfifo fifo
                 echo s > suid; chmod 4755 suid; chmod 2755 h1; rm -rf victim; mkdir victim; echo new > victim/new
                 mkdir deep; echo x > deep/x"
    assert_success
    [ "$(jq -r '.skipped[] | .path + " " + .type' <<<"$pending")" = "fifo fifo" ]
    [ "$(changed "$pending" deleted)" = "victim/file" ]
    # Between the run and the commit the host makes deep/ a symlink out of
    # the workspace: a forced commit replaces it, never writes through it.
    rm -rf "$WS/deep"
    ln -s "$WORK/outside" "$WS/deep"
    run --separate-stderr sbx-run commit "$STATE/h1"
    assert_failure 3
    [[ "$stderr" == *workspace-changed* ]]
    run sbx-run commit --force "$STATE/h1"
    assert_success
    [ "$(jq -r '.skipped[0].path' <<<"$output")" = fifo ]
    [ "$(jq -r .forced <<<"$output")" = true ]
    # Nothing outside changed; the symlinks are symlinks, never followed.
    [ "$(tree_sum "$WORK/outside")" = "$host_before" ]
    [ "$(sha256sum /etc/passwd)" = "$passwd_before" ]
    [ "$(readlink "$WS/to-host")" = /etc/passwd ] && [ -L "$WS/to-host" ]
    [ "$(readlink "$WS/escape")" = "$WORK/outside" ]
    [ -d "$WS/deep" ] && [ ! -L "$WS/deep" ] && [ "$(cat "$WS/deep/x")" = x ]
    # The hard link's names are two files; no fifo; no set-id bit.
    [ "$(stat -c %i "$WS/h1")" != "$(stat -c %i "$WS/h2")" ]
    [ "$(stat -c %h "$WS/h1")" = 1 ] && [ "$(cat "$WS/h2")" = data ]
    [ ! -e "$WS/fifo" ]
    [ "$(stat -c %a "$WS/suid")" = 755 ] && [ "$(stat -c %a "$WS/h1")" = 755 ]
    [ -z "$(find "$WS" -perm /6000)" ]
    # The whiteout over victim/: the old content gone, the new there.
    [ "$(ls -A "$WS/victim")" = new ]
    # Everything is the workspace owner's.
    owner=$(stat -c %u:%g "$WS")
    [ -z "$(find "$WS" ! -user "${owner%:*}" -o ! -group "${owner#*:}")" ]
}

@test "a commit after another run changed the workspace is refused (exit 3) unless forced; its lease is the runs'" {
    echo base > "$WS/base"
    spec_run w1 'echo mine > mine'
    assert_success
    spec_run w2 'echo theirs > theirs' '{}'
    assert_success
    [ "$(jq -r .speculative <<<"$result")" = null ] # not speculative: no such field
    run --separate-stderr sbx-run commit "$STATE/w1"
    assert_failure 3
    [[ "$stderr" == *workspace-changed* ]]
    [ ! -e "$WS/mine" ]
    [ "$(jq -r .state "$STATE/w1/pending.json")" = pending ]
    run sbx-run commit --force "$STATE/w1"
    assert_success
    [ "$(cat "$WS/mine")" = mine ] && [ "$(cat "$WS/theirs")" = theirs ] && [ "$(cat "$WS/base")" = base ]
    # Not a speculative run: nothing to commit (exit 2).
    run --separate-stderr sbx-run commit "$STATE/w2"
    assert_failure 2
    [[ "$stderr" == *not-speculative* ]]
}

@test "an expired pending change is swept (its record stays, saying so); a run over its quota keeps none" {
    spec_run x1 'echo late > late' '{"speculative": {"keepSeconds": 60}}'
    assert_success
    run sbx-run sweep --pending-only "$STATE"
    assert_success
    [ "$(jq -c '[.pendingExpired, .pendingWaiting, .removed]' <<<"$output")" = '[0,1,0]' ]
    [ -d "$STATE/x1/speculative" ]
    run sbx-run sweep --older-than 3600 --now-s $(($(date +%s) + 61)) "$STATE"
    assert_success
    [ "$(jq -c '[.pendingExpired, .pendingWaiting]' <<<"$output")" = '[1,0]' ]
    [ ! -e "$STATE/x1/speculative" ]
    [ "$(jq -r .state "$STATE/x1/pending.json")" = expired ]
    run --separate-stderr sbx-run commit "$STATE/x1"
    assert_failure 3
    [ ! -e "$WS/late" ]
    # Over maxWorkspaceBytes: the run fails as resource-exhausted, nothing pending.
    spec_run q1 'head -c 3000000 /dev/zero > big; sleep 5' '{"speculative": true, "maxWorkspaceBytes": 1000000}'
    [ "$(jq -r .failureClass <<<"$result")" = resource-exhausted ]
    [ "$(jq -r .state <<<"$pending")" = discarded ]
    [ ! -e "$STATE/q1/speculative/layer" ] && [ ! -e "$STATE/q1/pending.json" ]
    [ ! -e "$WS/big" ]
    # keepSeconds is bounded.
    spec_run q2 'true' '{"speculative": {"keepSeconds": 0}}'
    assert_failure 2
    [[ "$stderr" == *speculative.keepSeconds* ]]
}

@test "hard links that the quota charges once, but a commit would copy per name, count per name: the change is not kept" {
    echo base > "$WS/base"
    before=$(tree_sum "$WS")
    # One 300 kB inode (charged once while the run runs) under eleven names.
    spec_run l1 'head -c 300000 /dev/zero > f && for i in $(seq 10); do ln f l$i; done' \
        '{"speculative": true, "maxWorkspaceBytes": 1000000}'
    [ "$(jq -r .failureClass <<<"$result")" = resource-exhausted ] || fail "$result"
    [ "$(jq -r .state <<<"$pending")" = discarded ]
    [ ! -e "$STATE/l1/speculative/layer" ] && [ ! -e "$STATE/l1/pending.json" ]
    [ "$(tree_sum "$WS")" = "$before" ]
    # Two names fit: the change is pending, and its commit copies both.
    spec_run l2 'head -c 300000 /dev/zero > f && ln f l1' '{"speculative": true, "maxWorkspaceBytes": 1000000}'
    assert_success
    [ "$(jq -r '"\(.state) \(.bytes)"' <<<"$pending")" = "pending 600000" ]
}

@test "a change set is bounded in the bytes of its paths, not only in names: past 64 MiB the change is not kept" {
    before=$(tree_sum "$WS")
    # 17500 fifos at paths of 4015 bytes: 70 MB of paths, well under the name cap.
    spec_run p1 'd=$(printf "%0250d" 0); p=$d; for i in $(seq 14); do p=$p/$d; done
        mkdir -p "$p" && cd "$p" && seq -f "%0250g" 17500 | xargs mkfifo'
    [ "$(jq -r .failureClass <<<"$result")" = resource-exhausted ] || fail "$(head -c 600 <<<"$result")"
    [[ "$(jq -r .error <<<"$result")" == *"paths hold more than"* ]]
    [ "$(jq -r .state <<<"$pending")" = discarded ]
    [ ! -e "$STATE/p1/speculative/layer" ] && [ ! -e "$STATE/p1/pending.json" ]
    [ "$(tree_sum "$WS")" = "$before" ]
}

@test "the result lists changes up to 4 MiB of paths (a result stays readable however long its paths); changes.json has all" {
    # 1500 files at paths of 4015 bytes: 6 MB of paths.
    spec_run r1 'd=$(printf "%0250d" 0); p=$d; for i in $(seq 14); do p=$p/$d; done
        mkdir -p "$p" && cd "$p" && seq -f "%0250g" 1500 | xargs touch'
    assert_success
    [ "$(jq -r .state <<<"$pending")" = pending ]
    [ "$(jq -r .changesTruncated <<<"$pending")" = true ]
    listed=$(jq -r '.changes | length' <<<"$pending")
    [ "$listed" -lt 1100 ] && [ "$listed" -gt 1000 ]
    [ "$(jq -r '.changes | length' "$STATE/r1/changes.json")" = 1515 ]
}

@test "a commit waits a bounded time for the lease when asked (--lease-wait-ms): busy, the change still pending" {
    spec_run b1 'echo mine > mine'
    assert_success
    lock="$STATE/locks/ws-$(stat -c %d "$WS")-$(stat -c %i "$WS").lock"
    mkdir -p "$STATE/locks"
    rm -f "$WORK/held" && mkfifo "$WORK/held"
    flock --no-fork "$lock" sh -c 'echo held > "$1"; exec sleep 60' sh "$WORK/held" &
    LEASE_PID=$!
    await_fifo "$WORK/held"
    run --separate-stderr sbx-run commit --lease-wait-ms 200 "$STATE/b1"
    assert_failure 2
    [[ "$stderr" == *'"code":"busy"'* ]]
    [ ! -e "$WS/mine" ] && [ "$(jq -r .state "$STATE/b1/pending.json")" = pending ]
    kill "$LEASE_PID"
    wait "$LEASE_PID" 2>/dev/null || true
    LEASE_PID=
    run sbx-run commit --lease-wait-ms 5000 "$STATE/b1"
    assert_success
    [ "$(cat "$WS/mine")" = mine ]
}

@test "over HTTP: the result carries the change's id; commit is 409 once the workspace changed, unless forced; discard" {
    export SCIENCE_AGENT_DATA_DIR="$WORK/data" SCIENCE_AGENT_RUNNER_TOKEN="$TOKEN" SCIENCE_AGENT_RUNNER_PORT=0
    export SCIENTIFIC_ENVS=0
    unset SBX_DATA_DIR SCIENCE_AGENT_RUNNER_SOCKET
    PROJECT="$WORK/data/projects/p1"
    httpd_start
    mkdir -p "$PROJECT"
    chmod 777 "$PROJECT"
    echo keep > "$PROJECT/keep"
    signed /execute-shell "$(shell_request e1 'rm keep; echo one > one' '{"speculative": true}')"
    [ "$status_code" = 200 ] || fail "$output"
    id=$(jq -r .speculative.id <<<"$output")
    [ "$(jq -r '.speculative.changes | map(.path + ":" + .change) | join(" ")' <<<"$output")" = "keep:deleted one:created" ]
    [ "$(jq -r '.speculative | has("changesFile")' <<<"$output")" = false ]
    [ -e "$PROJECT/keep" ] && [ ! -e "$PROJECT/one" ]
    # Another run changes the workspace: the commit is a conflict.
    signed /execute-shell "$(shell_request e2 'echo two > two')"
    [ "$status_code" = 200 ]
    api POST "/shell-executions/$id/commit"
    [ "$status_code" = 409 ] || fail "$status_code $output"
    [[ "$output" == *"changed since"* ]]
    api POST "/shell-executions/$id/commit" -H 'content-type: application/json' --data '{"force": true}'
    [ "$status_code" = 200 ] || fail "$status_code $output"
    [ "$(jq -r .state <<<"$output")" = committed ]
    [ ! -e "$PROJECT/keep" ] && [ "$(cat "$PROJECT/one")" = one ] && [ "$(cat "$PROJECT/two")" = two ]
    api POST "/shell-executions/$id/discard"
    [ "$status_code" = 409 ]
    # A managed execution: committed or discarded by its own id.
    signed /shell-executions "$(shell_request m1 'echo three > three' '{"speculative": true}')"
    [ "$status_code" = 202 ]
    for _ in $(seq 300); do
        api GET "/shell-executions/m1?sessionId=s1&agentId=main"
        [ "$(jq -r .state <<<"$output")" = queued ] || [ "$(jq -r .state <<<"$output")" = running ] || break
        read -rt 0.1 <> <(:) || true
    done
    [ "$(jq -r .state <<<"$output")" = completed ] || fail "$output"
    [ "$(jq -r .result.speculative.state <<<"$output")" = pending ]
    api POST "/shell-executions/m1/discard?sessionId=s1&agentId=main"
    [ "$status_code" = 200 ] || fail "$status_code $output"
    [ "$(jq -r .state <<<"$output")" = discarded ]
    [ ! -e "$PROJECT/three" ]
    api POST "/shell-executions/nope/commit"
    [ "$status_code" = 404 ]
}

@test "over HTTP: a commit past thousands of long-named fifos answers, its skipped list capped (the change set has them all)" {
    export SCIENCE_AGENT_DATA_DIR="$WORK/data" SCIENCE_AGENT_RUNNER_TOKEN="$TOKEN" SCIENCE_AGENT_RUNNER_PORT=0
    export SCIENTIFIC_ENVS=0
    unset SBX_DATA_DIR SCIENCE_AGENT_RUNNER_SOCKET
    PROJECT="$WORK/data/projects/p1"
    httpd_start
    mkdir -p "$PROJECT"
    chmod 777 "$PROJECT"
    # 2300 fifos at paths of 4015 bytes: a full skipped list is over 8 MiB.
    signed /execute-shell "$(shell_request f1 'echo kept > kept; d=$(printf "%0250d" 0); p=$d; for i in $(seq 14); do p=$p/$d; done
        mkdir -p "$p" && cd "$p" && seq -f "%0250g" 2300 | xargs mkfifo' '{"speculative": true}')"
    [ "$status_code" = 200 ] || fail "$status_code $(head -c 300 <<<"$output")"
    [ "$(jq -r '.exitCode' <<<"$output")" = 0 ] || fail "$(jq -c '{exitCode, stderr}' <<<"$output" | head -c 600)"
    id=$(jq -r .speculative.id <<<"$output")
    [ "$(jq -r .speculative.counts.skipped <<<"$output")" = 2300 ]
    api POST "/shell-executions/$id/commit"
    [ "$status_code" = 200 ] || fail "$status_code $(head -c 300 <<<"$output")"
    [ "$(jq -r '"\(.state) \(.applied.skipped) \(.skipped | length) \(.skippedTruncated)"' <<<"$output")" = "committed 2300 100 true" ]
    [ "$(cat "$PROJECT/kept")" = kept ]
    [ -z "$(find "$PROJECT" -type p)" ]
}
