#!/usr/bin/env bats
# sbx-skills from a shell: put (the id computed independently, in Python),
# get, verify and ls; bad input refused by name with nothing written; a
# package changed after publication detected, then repaired by a put; a
# symlink planted in the store refused; the stamp trusted only while
# nothing in the package changed.

load httpd_helpers

setup() {
    WORK=$(mktemp -d /tmp/sbx-skills-test.XXXXXX)
    export SBX_DATA_DIR="$WORK/data"
    unset SCIENCE_AGENT_DATA_DIR
    STORE="$WORK/data/skill-packages"
    bundle=$(skill_bundle "SKILL.md=# Demo" "scripts/run.py=print(1)")
    ID=$(cat "$WORK/expected-id")
}

teardown() {
    rm -rf "$WORK"
}

# put_ok: puts $bundle and checks the answer.
put_ok() {
    run --separate-stderr sbx-skills put - <<<"$bundle"
    assert_success
    assert_equal "$output" "{\"id\":\"$ID\",\"root\":\"$STORE/$ID\"}"
}

# verified_by HOW: verify answers that the package passed, by HOW.
verified_by() {
    run --separate-stderr sbx-skills verify "$ID"
    assert_success
    assert_equal "$(jq_out '[.id, .root, .verified] | join(" ")')" "$ID $STORE/$ID $1"
}

# refused_as EXIT CODE: the last run failed with EXIT and diagnostic CODE.
refused_as() {
    assert_equal "$status" "$1"
    assert_equal "$(jq -r .code <<<"$stderr")" "$2"
}

@test "put publishes the package under its id, hashed once; get, verify and ls find it; a second put changes nothing" {
    put_ok
    assert_equal "$(cat "$STORE/$ID/demo/scripts/run.py")" "print(1)"
    assert_equal "$(jq -c . "$STORE/$ID/.manifest.json")" "[{\"id\":\"demo\",\"revision\":2,\"version\":\"0.1\",\"hash\":\"$(jq -r '.skills[0].hash' <<<"$bundle")\"}]"
    # Hashed at publication: the next check needs the stamp only.
    verified_by stamp
    run --separate-stderr sbx-skills get "$ID"
    assert_equal "$output" "{\"id\":\"$ID\",\"root\":\"$STORE/$ID\"}"
    run --separate-stderr sbx-skills ls
    assert_equal "$(jq_out -c .)" "[{\"id\":\"$ID\",\"root\":\"$STORE/$ID\",\"skills\":[{\"id\":\"demo\",\"revision\":2,\"version\":\"0.1\"}],\"verified\":true}]"
    ino=$(stat -c %i "$STORE/$ID")
    # What a killed put left goes once it is an hour old; a put under way stays.
    mkdir -p "$STORE/.incoming-$ID-stale/demo" "$STORE/.incoming-$ID-young"
    touch -d '2 hours ago' "$STORE/.incoming-$ID-stale"
    put_ok
    assert_equal "$(stat -c %i "$STORE/$ID")" "$ino"
    assert_equal "$(ls -A "$STORE" | sort | tr '\n' ' ')" ".incoming-$ID-young .verified $ID "
    # A file named on the command line is read like stdin.
    printf '%s' "$bundle" > "$WORK/bundle.json"
    run --separate-stderr sbx-skills put "$WORK/bundle.json"
    assert_equal "$status $(jq_out .id)" "0 $ID"
}

@test "bad input is refused naming what is wrong, and leaves no state" {
    refuse() {
        run --separate-stderr sbx-skills put - < <(printf '%s' "$1")
        refused_as 2 bad-input
        [[ "$(jq -r .message <<<"$stderr")" == *"$2"* ]] || fail "expected '$2' in: $stderr"
        [ ! -e "$WORK/data" ] || fail "bad input left $(find "$WORK/data")"
    }
    refuse "$(skill_bundle "README.md=x")" "skill demo has no SKILL.md"
    refuse "$(jq -c '.skills[0].files[0].content = "IyBEZW0" | .skills[0].files[0].size = 5' <<<"$bundle")" "SKILL.md is not canonical base64"
    refuse "$(jq -c '.skills[0].files[0].size = 99' <<<"$bundle")" "SKILL.md size does not match its content"
    refuse "$(jq -c '.skills[0].files[0].hash = "00"' <<<"$bundle")" "SKILL.md hash does not match its content"
    refuse "$(jq -c '.skills[0].hash = "00"' <<<"$bundle")" "skill demo: hash does not match its files"
    refuse "$(jq -c '.skills[0].id = "Bad_Id"' <<<"$bundle")" "skill id must match"
    refuse "$(jq -c '.skills[0].revision = 0' <<<"$bundle")" "skill demo: revision must be an integer of at least 1"
    refuse "$(jq -c '.skills[0].files[1].path = "../x"' <<<"$bundle")" "skill demo: file 1 needs a clean relative path"
    refuse "$(jq -c '.skills[0].files[1].path = "SKILL.md"' <<<"$bundle")" "a path appears twice"
    refuse "$(jq -c '.skills += [.skills[0]]' <<<"$bundle")" "a skill id appears twice"
    refuse "$(jq -c '.id = "0000"' <<<"$bundle")" "the package id is $ID, not 0000"
    refuse '{"skills": []}' "skills must be a non-empty array"
    refuse '[1]' "Request body must be a JSON object"
    refuse '{"skills": ' "end of file"
    refuse '' "Unexpected end of JSON input"
    # Ids and command lines are checked before anything is read.
    run --separate-stderr sbx-skills verify "../$ID"
    refused_as 2 bad-id
    run --separate-stderr sbx-skills verify "$ID"
    refused_as 2 not-held
    run --separate-stderr sbx-skills frobnicate
    assert_equal "$status" 2
    [ ! -e "$WORK/data" ] || fail "a refusal left $(find "$WORK/data")"
}

@test "a package changed after publication fails verify, reads as not held, and a put repairs it" {
    put_ok
    # The same size, in place: only the inode's ctime tells.
    printf 'print(2)' > "$STORE/$ID/demo/scripts/run.py"
    run --separate-stderr sbx-skills verify "$ID"
    refused_as 9 integrity
    run --separate-stderr sbx-skills get "$ID"
    assert_equal "$output" "{\"id\":\"$ID\"}"
    run --separate-stderr sbx-skills ls
    assert_equal "$(jq_out '.[0].verified')" false
    put_ok
    assert_equal "$(cat "$STORE/$ID/demo/scripts/run.py")" "print(1)"
    verified_by stamp
    # Anything beside the skills and the manifest fails it too.
    echo x > "$STORE/$ID/extra"
    run --separate-stderr sbx-skills verify "$ID"
    refused_as 9 integrity
}

@test "the stamp is trusted only while nothing changed, and only when it is the store's own" {
    put_ok
    # The same bytes written again: re-hashed once, stamped again.
    printf 'print(1)' > "$STORE/$ID/demo/scripts/run.py"
    verified_by hashed
    verified_by stamp
    # A stamp anyone else could have written is not trusted.
    chmod 666 "$STORE/.verified/$ID"
    verified_by hashed
    assert_equal "$(stat -c %a "$STORE/.verified/$ID")" 600
    verified_by stamp
    if [ "$(id -u)" -eq 0 ]; then
        chown nobody "$STORE/.verified/$ID"
        verified_by hashed
        assert_equal "$(stat -c %U "$STORE/.verified/$ID")" root
    fi
    # A stamp copied from another package does not vouch for this one.
    jq -c '.fingerprint = "0000000000000000000000000000000000000000000000000000000000000000"' "$STORE/.verified/$ID" > "$WORK/stamp"
    cp "$WORK/stamp" "$STORE/.verified/$ID"
    verified_by hashed
}

@test "a symlink planted in the store is refused, and a put puts the package back" {
    put_ok
    # The package's name made a symlink to a genuine copy elsewhere.
    cp -a "$STORE/$ID" "$WORK/copy"
    rm -rf "${STORE:?}/$ID"
    ln -s "$WORK/copy" "$STORE/$ID"
    run --separate-stderr sbx-skills verify "$ID"
    refused_as 2 not-held
    [[ "$(jq -r .message <<<"$stderr")" == *"symbolic link"* ]] || fail "$stderr"
    run --separate-stderr sbx-skills get "$ID"
    assert_equal "$output" "{\"id\":\"$ID\"}"
    run --separate-stderr sbx-skills ls
    assert_equal "$output" "[]"
    put_ok
    [ ! -L "$STORE/$ID" ] && [ -d "$STORE/$ID" ] || fail "still a symlink"
    assert_equal "$(cat "$WORK/copy/demo/scripts/run.py")" "print(1)"
    # A file of the package made a symlink to the very same bytes.
    printf 'print(1)' > "$WORK/same.py"
    ln -sf "$WORK/same.py" "$STORE/$ID/demo/scripts/run.py"
    run --separate-stderr sbx-skills verify "$ID"
    refused_as 9 integrity
    # The store itself a symlink: nothing is written through it.
    rm -rf "${STORE:?}"
    mkdir "$WORK/elsewhere"
    ln -s "$WORK/elsewhere" "$STORE"
    run --separate-stderr sbx-skills put - <<<"$bundle"
    refused_as 9 symlink
    assert_equal "$(ls -A "$WORK/elsewhere")" ""
}

@test "verify --fd checks the directory open on that fd, which must be the held package" {
    put_ok
    run --separate-stderr sbx-skills verify --fd 3 "$ID" 3<"$STORE/$ID"
    assert_equal "$status $(jq_out .verified)" "0 stamp"
    cp -a "$STORE/$ID" "$WORK/copy"
    run --separate-stderr sbx-skills verify --fd 3 "$ID" 3<"$WORK/copy"
    refused_as 2 not-held
    run --separate-stderr sbx-skills get --fd 3 "$ID" 3<"$STORE/$ID"
    assert_equal "$status" 2
}

@test "--help lists the commands and exit codes; --version names the program" {
    run sbx-skills --help
    assert_success
    assert_output --partial "put [BUNDLE|-] | get ID | verify [--fd N] ID | ls"
    assert_output --partial "integrity"
    run sbx-skills --version
    assert_success
    assert_output --partial sbx-skills
}
