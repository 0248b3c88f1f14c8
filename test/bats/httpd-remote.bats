#!/usr/bin/env bats
# Remote workspaces over HTTP (runner-api 4 rows 30-38, 5.7, 8 items 16
# and 23): key and path grammars, symlinks refused with nothing written
# outside, plain and verified uploads (409 vs 400), quota, listings,
# snapshots that outlive the workspace, skill packages.

load httpd_helpers

setup() {
    httpd_setup
    RW="$WORK/data/remote-workspaces"
    OUT="$WORK/outside"
    mkdir -p "$OUT"
}

teardown() { httpd_teardown; }

# put PATH-QUERY DATA [CURL-ARGS...]: a plain upload of DATA.
put() {
    local where=$1 data=$2
    shift 2
    printf '%s' "$data" > "$WORK/up.bin"
    api PUT "/remote-workspace/file?$where" --data-binary @"$WORK/up.bin" "$@"
}

# vput PATH-QUERY FILE [SIZE] [SHA] [EXEC]: a verified upload of FILE.
vput() {
    local size=${3:-$(stat -c %s "$2")} sha=${4:-$(sha256sum < "$2" | cut -d' ' -f1)}
    api PUT "/remote-workspace/transfer-file?$1" --data-binary @"$2" -H "x-workspace-size: $size" \
        -H "x-workspace-sha256: $sha" ${5:+-H "x-workspace-executable: $5"}
}

uploads_left() { ls -A "$WORK/data/runner-uploads" | wc -l; }

@test "workspace keys: every malformed form is 400 and creates nothing; a good key is trimmed and made on demand" {
    for key in "" "%20%20" "/abs" "a%5Cb" "a//b" "a/./b" "a/../b" "a/" "." ".." "a%20b" "%C3%BC" "$(printf 'k%.0s' {1..501})"; do
        api GET "/remote-workspace/files?workspace=$key"
        assert_equal "$status_code $(jq_out .error)" "400 Invalid remote workspace key"
    done
    assert_equal "$(ls -A "$RW")" ""
    api GET "/remote-workspace/files?workspace=%20team/a.b_c-1%20"
    assert_equal "$status_code $output" "200 []"
    [ -d "$RW/team/a.b_c-1" ]
}

@test "a symlink anywhere on the key's path, or remote-workspaces itself a symlink, is refused" {
    ln -s "$OUT" "$RW/link"
    api GET "/remote-workspace/files?workspace=link/x"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path must not contain symbolic links"
    put "workspace=link/x&path=f" data
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path must not contain symbolic links"
    assert_equal "$(ls -A "$OUT")" ""
    mv "$RW" "$WORK/real-rw" && ln -s "$WORK/real-rw" "$RW"
    api GET "/remote-workspace/files?workspace=w"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path must not contain symbolic links"
    signed /execute-shell "$(shell_request k1 'true' '{"runnerWorkspaceKey": "w"}')"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path must not contain symbolic links"
    # A workspaceRoot below the symlinked root is outside every root (item 23).
    mkdir -p "$WORK/real-rw/direct"
    signed /execute-shell "$(jq -c --arg ws "$RW/direct" '.workspaceRoot = $ws' <<<"$(shell_request k2 'true')")"
    assert_equal "$status_code $(jq_out .error)" "400 Runner workspace must be inside the configured projects or remote-workspaces directory"
    # A symlink below a root is refused whatever it points to (issue 16).
    ln -s "$OUT" "$PROJECT/escape"
    signed /execute-shell "$(jq -c --arg ws "$PROJECT/escape" '.workspaceRoot = $ws' <<<"$(shell_request k3 'true')")"
    assert_equal "$status_code $(jq_out .error)" "400 Runner workspace path must not contain symbolic links"
}

@test "file paths: each malformed form is 400 for reads and writes" {
    for p in "" "/etc/passwd" "a/../b" "a//b" "./a" "a/" "a%5Cb" "$(printf 'p%.0s' {1..2001})"; do
        api GET "/remote-workspace/file?workspace=w&path=$p"
        assert_equal "$status_code $(jq_out .error)" "400 Invalid remote workspace path"
        put "workspace=w&path=$p" x
        assert_equal "$status_code $(jq_out .error)" "400 Invalid remote workspace path"
    done
    assert_equal "$(uploads_left)" 0
}

@test "plain upload: 201, then 409 under reject, replaced under overwrite; concurrent creators get one 201" {
    put "workspace=w&path=dir/a.txt" one
    assert_equal "$status_code $output" '201 {"path":"dir/a.txt","size":3}'
    put "workspace=w&path=dir/a.txt" two
    assert_equal "$status_code $(jq_out .error)" "409 Remote workspace file already exists"
    put "workspace=w&path=dir/a.txt&conflict=overwrite" three
    assert_equal "$status_code $(cat "$RW/w/dir/a.txt")" "201 three"
    put "workspace=w&path=dir/a.txt&conflict=maybe" x
    assert_equal "$status_code" 400
    # Eight creators of one new path: the link is atomic, so one wins.
    for i in 1 2 3 4 5 6 7 8; do
        curl -s -o /dev/null -w '%{http_code}\n' -X PUT -H "authorization: Bearer $TOKEN" --data-binary "c$i" \
            "$BASE/remote-workspace/file?workspace=w&path=race.txt" > "$WORK/race.$i" &
    done
    wait $(jobs -p | grep -v "^$HTTPD_PID$") 2>/dev/null || true
    assert_equal "$(cat "$WORK"/race.* | sort | uniq -c | tr -s ' ' | sed 's/^ //' | tr '\n' '|')" "1 201|7 409|"
    assert_equal "$(uploads_left)" 0
}

@test "writes refuse a symlinked parent or target and write nothing outside; reads resolve and must stay inside" {
    mkdir -p "$RW/w"
    ln -s "$OUT" "$RW/w/dir"
    echo secret > "$OUT/target"
    ln -s "$OUT/target" "$RW/w/t"
    put "workspace=w&path=dir/x" data
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path must not contain symbolic links"
    put "workspace=w&path=t&conflict=overwrite" data
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path must not contain symbolic links"
    vput "workspace=w&path=dir/y" "$FIXTURES/fake-npu-smi"
    assert_equal "$status_code" 400
    assert_equal "$(ls -A "$OUT") $(cat "$OUT/target")" "target secret"
    api GET "/remote-workspace/file?workspace=w&path=t"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace path escapes the workspace: t"
    echo inside > "$RW/w/real.txt"
    ln -s real.txt "$RW/w/alias"
    api GET "/remote-workspace/file?workspace=w&path=alias"
    assert_equal "$status_code $output" "200 inside"
    api GET "/remote-workspace/file?workspace=w&path=nope"
    assert_equal "$status_code" 400
    assert_equal "$(uploads_left)" 0
}

@test "listing: sorted by path, symlinks skipped, directories expanded, at most 50 paths" {
    mkdir -p "$RW/w/b/c" "$RW/w/a"
    printf 12 > "$RW/w/b/c/f2"; printf 1 > "$RW/w/a/f1"; printf 123 > "$RW/w/z"
    ln -s z "$RW/w/link"
    api GET "/remote-workspace/files?workspace=w"
    assert_equal "$(jq -c '[.[] | [.path, .size]]' <<<"$output")" '[["a/f1",1],["b/c/f2",2],["z",3]]'
    [[ "$(jq_out '.[0].modifiedAt')" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z$ ]]
    api POST /remote-workspace/files --data-binary '{"workspace":"w","paths":["b","link","z"]}'
    assert_equal "$(jq -c '[.[].path]' <<<"$output")" '["b/c/f2","z"]'
    api POST /remote-workspace/files --data-binary "$(jq -cn '{workspace: "w", paths: [range(51) | "p\(.)"]}')"
    assert_equal "$status_code" 400
}

@test "quota on upload: total - replaced + incoming; a body over the limit is refused" {
    httpd_stop
    httpd_start SCIENCE_AGENT_MAX_WORKSPACE_BYTES=1000
    head -c 600 /dev/zero > "$WORK/600"
    api PUT "/remote-workspace/file?workspace=q&path=a" --data-binary @"$WORK/600"
    assert_equal "$status_code" 201
    api PUT "/remote-workspace/file?workspace=q&path=b" --data-binary @"$WORK/600"
    assert_equal "$status_code" 400
    [[ "$(jq_out .error)" == "Workspace exceeds the 1000 byte quota"* ]]
    head -c 900 /dev/zero > "$WORK/900"
    api PUT "/remote-workspace/file?workspace=q&path=a&conflict=overwrite" --data-binary @"$WORK/900"
    assert_equal "$status_code" 201
    head -c 1001 /dev/zero > "$WORK/1001"
    api PUT "/remote-workspace/file?workspace=q&path=c" --data-binary @"$WORK/1001"
    assert_equal "$status_code $(jq_out .error)" "400 Request body exceeds the 1000 byte limit"
    [ ! -e "$RW/q/b" ] && [ ! -e "$RW/q/c" ]
    assert_equal "$(uploads_left)" 0
}

@test "verified upload: metadata checked, a corrupt or short body publishes nothing, collision is 400, exec bits kept" {
    printf '#!/bin/sh\necho hi\n' > "$WORK/run.sh"
    sha=$(sha256sum < "$WORK/run.sh" | cut -d' ' -f1)
    for bad in "size=-1" "size=1.5" "size=9007199254740992" "sha=${sha^^}" "sha=abc" "exec=2" "exec=x" "exec=0o111"; do
        size=$(stat -c %s "$WORK/run.sh"); s=$sha; x=""
        case $bad in size=*) size=${bad#size=} ;; sha=*) s=${bad#sha=} ;; exec=*) x=${bad#exec=} ;; esac
        vput "workspace=v&path=run.sh" "$WORK/run.sh" "$size" "$s" "$x"
        assert_equal "$bad: $status_code $(jq_out .error)" "$bad: 400 Invalid verified upload metadata"
    done
    vput "workspace=v&path=run.sh&conflict=nope" "$WORK/run.sh"
    assert_equal "$status_code $(jq_out .error)" "400 Invalid verified upload metadata"
    printf '#!/bin/sh\necho HI\n' > "$WORK/corrupt"
    vput "workspace=v&path=run.sh" "$WORK/corrupt" "" "$sha"
    assert_equal "$status_code $(jq_out .error)" "400 Verified upload content does not match x-workspace-sha256"
    vput "workspace=v&path=run.sh" "$WORK/run.sh" 5 "$sha"
    assert_equal "$status_code $(jq_out .error)" "400 Verified upload size does not match x-workspace-size"
    [ ! -e "$RW/v/run.sh" ]
    assert_equal "$(uploads_left)" 0
    vput "workspace=v&path=bin/run.sh" "$WORK/run.sh" "" "" 73
    assert_equal "$status_code $(jq -c . <<<"$output")" "201 {\"path\":\"bin/run.sh\",\"size\":18,\"sha256\":\"$sha\"}"
    assert_equal "$(stat -c %a "$RW/v/bin/run.sh")" 755
    vput "workspace=v&path=bin/run.sh" "$WORK/run.sh"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace file already exists"
    vput "workspace=v&path=bin/run.sh&conflict=overwrite" "$WORK/run.sh"
    assert_equal "$status_code $(stat -c %a "$RW/v/bin/run.sh")" "201 644"
}

@test "a streamed 64 MiB verified upload lands byte for byte" {
    head -c $((64 << 20)) /dev/urandom > "$WORK/big"
    vput "workspace=big&path=big.bin" "$WORK/big"
    assert_equal "$status_code" 201
    cmp "$WORK/big" "$RW/big/big.bin"
}

@test "a read of a file that shrinks while it is sent ends as a cut transfer, and the whole file reads back byte for byte" {
    head -c $((32 << 20)) /dev/urandom > "$WORK/big"
    vput "workspace=shrink&path=big.bin" "$WORK/big"
    assert_equal "$status_code" 201
    curl -sS -f -o "$WORK/back" -H "authorization: Bearer $TOKEN" "$BASE/remote-workspace/file?workspace=shrink&path=big.bin"
    cmp "$WORK/big" "$WORK/back"
    # A slow reader; once its first bytes are in, the file loses most of its length.
    rm -f "$WORK/back"
    timeout 60 curl -sS --limit-rate 1M -o "$WORK/back" -H "authorization: Bearer $TOKEN" \
        "$BASE/remote-workspace/file?workspace=shrink&path=big.bin" 2> "$WORK/curl.err" &
    local reader=$!
    until [ -s "$WORK/back" ]; do sleep 0.05; done
    truncate -s 1M "$RW/shrink/big.bin"
    local rc=0
    wait "$reader" || rc=$?
    cat "$WORK/curl.err" >&2
    # curl saw the transfer cut (18: partial file), never a hang (124) nor a whole file.
    [ "$rc" -eq 18 ]
    [ "$(stat -c %s "$WORK/back")" -lt $((32 << 20)) ]
    # Nothing keeps working on the dead transfer: over two seconds the
    # server uses well under one of CPU (a send loop on the short file
    # would use all of it).
    local t0 t1
    t0=$(awk '{ print $14 + $15 }' "/proc/$HTTPD_PID/stat")
    sleep 2
    t1=$(awk '{ print $14 + $15 }' "/proc/$HTTPD_PID/stat")
    echo "CPU ticks over 2 s: $((t1 - t0))" >&2
    [ $((t1 - t0)) -lt $(( $(getconf CLK_TCK) / 2 )) ]
    # The server answers on.
    api GET "/remote-workspace/files?workspace=shrink"
    assert_equal "$status_code" 200
}

@test "snapshots: immutable, survive deletion, only the owner's selected paths read back" {
    put "workspace=s&path=keep/a.txt" alpha
    put "workspace=s&path=other.txt" beta
    vput "workspace=s&path=tool.sh" "$FIXTURES/fake-npu-smi" "" "" 73
    api POST /remote-workspace/snapshots --data-binary '{"workspace":"s","paths":["keep","tool.sh"]}'
    assert_equal "$status_code" 201
    id=$(jq_out .id)
    [[ "$id" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
    assert_equal "$(jq -c '[.workspace, [.files[] | [.path, .size, .executable]]]' <<<"$output")" \
        "[\"s\",[[\"keep/a.txt\",5,0],[\"tool.sh\",$(stat -c %s "$FIXTURES/fake-npu-smi"),73]]]"
    snapshot=$output
    # The client's transfer manager sends .executable back as it came: accepted.
    vput "workspace=s2&path=tool.sh" "$FIXTURES/fake-npu-smi" "" "" "$(jq -r '.files[1].executable' <<<"$snapshot")"
    assert_equal "$status_code" 201
    assert_equal "$(stat -c %a "$RW/s2/tool.sh")" 755
    vput "workspace=s2&path=a.txt" "$RW/s/keep/a.txt" "" "" 0
    assert_equal "$status_code" 201
    vput "workspace=s2&path=b.txt" "$RW/s/keep/a.txt" "" "" true
    assert_equal "$status_code $(stat -c %a "$RW/s2/b.txt")" "201 755"
    vput "workspace=s2&path=c.txt" "$RW/s/keep/a.txt" "" "" 511
    assert_equal "$status_code" 400
    assert_equal "$(jq -r '.files[0].sha256' <<<"$snapshot")" "$(printf alpha | sha256sum | cut -d' ' -f1)"
    put "workspace=s&path=keep/a.txt&conflict=overwrite" changed
    api DELETE "/remote-workspace?workspace=s"
    assert_equal "$status_code $output" '200 {"deleted":true}'
    [ ! -e "$RW/s" ]
    api GET "/remote-workspace/snapshots/$id/file?workspace=s&path=keep/a.txt"
    assert_equal "$status_code $output" "200 alpha"
    api GET "/remote-workspace/snapshots/$id/file?workspace=s&path=other.txt"
    assert_equal "$status_code $(jq_out .error)" "400 The path was not selected in this snapshot: other.txt"
    api GET "/remote-workspace/snapshots/$id/file?workspace=t&path=keep/a.txt"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace snapshot not found"
    api GET "/remote-workspace/snapshots/00000000-0000-4000-8000-000000000000/file?workspace=s&path=keep/a.txt"
    assert_equal "$status_code" 400
    api GET "/remote-workspace/snapshots/not-a-uuid/file?workspace=s&path=keep/a.txt"
    assert_equal "$status_code" 404
    api POST /remote-workspace/snapshots --data-binary "$(jq -cn '{workspace: "s", paths: [range(51) | "p\(.)"]}')"
    assert_equal "$status_code" 400
}

@test "skill packages: the id is the canonical manifest's SHA-256; every integrity rule refuses" {
    bundle=$(skill_bundle "SKILL.md=# Demo" "scripts/run.py=print(1)")
    api POST /skill-packages --data-binary "$bundle"
    assert_equal "$status_code $(jq_out .id)" "200 $(cat "$WORK/expected-id")"
    root=$(jq_out .root)
    assert_equal "$root" "$WORK/data/skill-packages/$(cat "$WORK/expected-id")"
    assert_equal "$(cat "$root/demo/scripts/run.py")" "print(1)"
    api GET "/skill-packages/$(cat "$WORK/expected-id")"
    assert_equal "$(jq_out .root)" "$root"
    api GET "/skill-packages/$(printf 'a%.0s' {1..64})"
    assert_equal "$status_code $(jq -c 'has("root")' <<<"$output")" "200 false"
    api GET /skill-packages/not-hex
    assert_equal "$status_code" 404
    refuse() { api POST /skill-packages --data-binary "$1"; assert_equal "$status_code" 400; [[ "$(jq_out .error)" == "Skill package integrity check failed: "* ]] || fail "refused otherwise: $output"; }
    refuse "$(skill_bundle "README.md=x")"
    refuse "$(jq -c '.skills[0].files[0].content = "IyBEZW0" | .skills[0].files[0].size = 5' <<<"$bundle")"
    refuse "$(jq -c '.skills[0].files[0].content = "IyBEZW1=" | .skills[0].files[0].size = 5' <<<"$bundle")"
    refuse "$(jq -c '.skills[0].hash = "00"' <<<"$bundle")"
    refuse "$(jq -c '.skills[0].id = "Bad_Id"' <<<"$bundle")"
    refuse "$(jq -c '.skills[0].revision = 0' <<<"$bundle")"
    refuse "$(jq -c '.skills[0].files[1].path = "../x"' <<<"$bundle")"
    refuse "$(jq -c '.id = "0000"' <<<"$bundle")"
    refuse '{"skills": []}'
}

@test "executions on a runnerWorkspaceKey run there, without the read-only parent" {
    signed /execute-shell "$(shell_request k1 'pwd; echo made > made.txt; ls /parent_workspace 2>&1 | head -1' "{\"runnerWorkspaceKey\": \"team/k1\", \"readOnlyWorkspaceRoot\": \"$PROJECT\"}")"
    assert_equal "$status_code" 200
    assert_equal "$(jq_out .stdout | head -1)" /workspace
    assert_equal "$(cat "$RW/team/k1/made.txt")" made
    refute_output --partial "parent_workspace/"
    signed /execute-shell "$(shell_request k2 'true' '{"runnerWorkspaceKey": "../x"}')"
    assert_equal "$status_code $(jq_out .error)" "400 Invalid remote workspace key"
}

@test "DELETE /remote-workspace removes a tree 3,000 levels deep, and as root gives the workspace's uid back" {
    signed /execute-shell "$(shell_request deep-uid 'echo x > f' '{"runnerWorkspaceKey": "deep"}')"
    [ "$status_code" = 200 ] || fail "$output"
    dir="$WORK/data/remote-workspaces/deep"
    uid=$(stat -c %u "$dir")
    # Far past the 512 levels a run may make: as the host could.
    # One process (a mkdir forked from ever deeper directories costs the
    # kernel more each time: 3,000 of them took five minutes).
    python3 -c 'import os, sys
os.chdir(sys.argv[1])
for _ in range(3000):
    os.mkdir("d"); os.chdir("d")
open("f", "w").write("bottom\n")' "$dir"
    if [ "$(id -u)" -eq 0 ]; then
        [ -f "$WORK/data/workspace-uids/$uid" ] || fail "no registry entry for $uid"
    fi
    api DELETE "/remote-workspace?workspace=deep"
    [ "$status_code" = 200 ] || fail "$status_code $output"
    [ ! -e "$dir" ]
    [ ! -e "$WORK/data/workspace-uids/$uid" ]
}

# snap KEY PATHS-JSON: a snapshot of KEY; its id in $snap_id.
snap() {
    api POST /remote-workspace/snapshots --data-binary "{\"workspace\":\"$1\",\"paths\":$2}"
    assert_equal "$status_code" 201
    snap_id=$(jq_out .id)
}

sha_of() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
# obj CONTENT: where the remote snapshot store (an sbx-snap store, $OBJ
# its objects) keeps CONTENT.
obj() {
    local hex
    hex=$(sha_of "$1")
    printf '%s/%s/%s' "$OBJ" "${hex:0:2}" "${hex:2}"
}
# versions KEY: how many snapshots the key's ref still holds.
versions() {
    sbx-snap log --ref "remote-$(sha_of "$1")" --store "$WORK/data/remote-snapshots" | wc -l
}

@test "snapshot collection: the newest per key stay, unreferenced objects go after the grace, referenced ones stay" {
    httpd_stop
    httpd_start SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP=2
    OBJ="$WORK/data/remote-snapshots/objects"
    run curl -sS "$BASE/health"
    assert_equal "$(jq -c .retention.remoteSnapshots <<<"$output")" '{"keepPerWorkspace":2,"graceSeconds":3600}'
    put "workspace=k&path=a.txt" v1
    snap k '["a.txt"]'
    s1=$snap_id
    put "workspace=k&path=a.txt&conflict=overwrite" v2
    snap k '["a.txt"]'
    s2=$snap_id
    put "workspace=other&path=b.txt" v1
    snap other null
    o1=$snap_id
    # Leftovers no snapshot names: one past the grace, one within it,
    # and a crashed writer's partial object.
    mkdir -p "$(dirname "$(obj old)")" "$(dirname "$(obj young)")"
    printf old > "$(obj old)"
    touch -d '2 hours ago' "$(obj old)"
    printf young > "$(obj young)"
    printf partial > "$WORK/data/remote-snapshots/tmp/obj.crashed"
    touch -d '2 hours ago' "$WORK/data/remote-snapshots/tmp/obj.crashed"
    put "workspace=k&path=a.txt&conflict=overwrite" v3
    snap k '["a.txt"]'
    s3=$snap_id
    # The third snapshot of k asks for a pass: s1 goes, and the old
    # leftovers (a pass another snapshot asked for may take those first).
    for _ in $(seq 100); do
        [ -e "$(obj old)" ] || [ -e "$WORK/data/remote-snapshots/tmp/obj.crashed" ] || [ "$(versions k)" != 2 ] ||
            [ "$(curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer $TOKEN" \
                "$BASE/remote-workspace/snapshots/$s1/file?workspace=k&path=a.txt")" != 400 ] || break
        sleep 0.1
    done
    [ ! -e "$(obj old)" ]
    [ ! -e "$WORK/data/remote-snapshots/tmp/obj.crashed" ]
    [ -e "$(obj young)" ]
    assert_equal "$(versions k) $(versions other)" "2 1"
    api GET "/remote-workspace/snapshots/$s1/file?workspace=k&path=a.txt"
    assert_equal "$status_code $(jq_out .error)" "400 Remote workspace snapshot not found"
    # v1 is still named by other's snapshot; v2 and v3 by k's two.
    api GET "/remote-workspace/snapshots/$o1/file?workspace=other&path=b.txt"
    assert_equal "$status_code $output" "200 v1"
    api GET "/remote-workspace/snapshots/$s2/file?workspace=k&path=a.txt"
    assert_equal "$status_code $output" "200 v2"
    # Without a grace the young leftover goes too, once a second has
    # passed (file times are coarse); every kept snapshot still reads.
    httpd_stop
    httpd_start SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP=1 SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS=0
    for _ in $(seq 100); do
        [ -e "$(obj young)" ] || [ -e "$(obj v2)" ] || break
        sleep 0.1
    done
    [ ! -e "$(obj young)" ]
    [ ! -e "$(obj v2)" ]
    api GET "/remote-workspace/snapshots/$s2/file?workspace=k&path=a.txt"
    assert_equal "$status_code" 400
    api GET "/remote-workspace/snapshots/$s3/file?workspace=k&path=a.txt"
    assert_equal "$status_code $output" "200 v3"
    api GET "/remote-workspace/snapshots/$o1/file?workspace=other&path=b.txt"
    assert_equal "$status_code $output" "200 v1"
    # Left: v1 and v3, and the two kept snapshots' manifests.
    [ -e "$(obj v1)" ] && [ -e "$(obj v3)" ]
    assert_equal "$(find "$OBJ" -type f | wc -l)" 4
    assert_equal "$(versions k) $(versions other)" "1 1"
    run curl -sS "$BASE/health"
    [ "$(jq .retention.collected.snapshotObjects <<<"$output")" -ge 2 ]
}

@test "snapshot collection races snapshots of the same bytes: every snapshot reads back whole" {
    httpd_stop
    httpd_start SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP=1 SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS=0
    # Two keys take turns with the same two contents: each new snapshot
    # drops its key's last, so an object is unreferenced from one key
    # while the other's newest snapshot is being made with it.
    pids=()
    for key in ka kb; do
        (
            for i in $(seq 40); do
                c=$((i % 2))
                curl -sf -X PUT -H "authorization: Bearer $TOKEN" --data-binary "content-$c" \
                    "$BASE/remote-workspace/file?workspace=$key&path=f&conflict=overwrite" > /dev/null || exit 1
                id=$(curl -sf -X POST -H "authorization: Bearer $TOKEN" \
                    --data-binary "{\"workspace\":\"$key\",\"paths\":[\"f\"]}" "$BASE/remote-workspace/snapshots" | jq -r .id)
                got=$(curl -sS -H "authorization: Bearer $TOKEN" "$BASE/remote-workspace/snapshots/$id/file?workspace=$key&path=f")
                [ "$got" = "content-$c" ] || { echo "$key $i: $got" >&2; exit 1; }
                echo "$id" > "$WORK/last-$key"
            done
        ) 2>>"$WORK/race.err" &
        pids+=($!)
    done
    wait "${pids[0]}" && wait "${pids[1]}" || fail "a snapshot did not read back: $(cat "$WORK/race.err")"
    # Both keys' last snapshots hold content-0: content-1 goes, they read.
    # Their manifests are the same tree (f: content-0), one object.
    OBJ="$WORK/data/remote-snapshots/objects"
    for _ in $(seq 100); do
        [ ! -e "$(obj content-1)" ] && [ "$(find "$OBJ" -type f | wc -l)" = 2 ] && break
        sleep 0.1
    done
    [ ! -e "$(obj content-1)" ] && [ -e "$(obj content-0)" ]
    assert_equal "$(find "$OBJ" -type f | wc -l)" 2
    assert_equal "$(versions ka) $(versions kb)" "1 1"
    for key in ka kb; do
        api GET "/remote-workspace/snapshots/$(cat "$WORK/last-$key")/file?workspace=$key&path=f"
        assert_equal "$status_code $output" "200 content-0"
    done
}
