#!/usr/bin/env bats
# The remote flow as the newest JavaScript client drives it
# (test/node/remote-flow.mjs) against sbx-httpd.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

@test "a Node.js client uploads, runs on the key, lists, snapshots, reads back, deletes, mounts skills" {
    command -v node >/dev/null || fail "node is missing: make deps installs nodejs"
    run node "$BATS_TEST_DIRNAME/../node/remote-flow.mjs" "$BASE" "$TOKEN"
    echo "$output"
    assert_success
    refute_output --partial "not ok"
    assert_output --partial "ok: and writes its extensions into the workspace"
}
