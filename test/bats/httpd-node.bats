#!/usr/bin/env bats
# The API as a JavaScript client sees it: test/node/runner-client.mjs
# (fetch, Date-header clock offset, HMAC signing) against sbx-httpd.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

@test "a Node.js client signs and calls the API exactly as the real RunnerClient" {
    command -v node >/dev/null || fail "node is missing: make deps installs nodejs"
    run node "$BATS_TEST_DIRNAME/../node/runner-client.mjs" "$BASE" "$TOKEN" "$PROJECT"
    echo "$output"
    assert_success
    refute_output --partial "not ok"
    assert_output --partial "ok: a terminal record has result, version and workspaceSnapshot"
}
