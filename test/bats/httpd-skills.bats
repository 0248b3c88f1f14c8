#!/usr/bin/env bats
# Skill packages through a real sbx-httpd and sbx-skills: a package is
# verified when the request arrives and again when its execution starts,
# so one changed while the execution waited in line is never mounted.

load httpd_helpers

setup() { httpd_setup; }
teardown() { httpd_teardown; }

owner='sessionId=s1&agentId=main'

@test "a package changed while its execution waits in line is caught when it is mounted; a put repairs it" {
    bundle=$(skill_bundle "SKILL.md=# Demo" "run.sh=echo genuine")
    api POST /skill-packages --data-binary "$bundle"
    assert_equal "$status_code" 200
    root=$(jq_out .root)
    # The workspace's line is held by a1 until it is cancelled.
    signed /shell-executions "$(shell_request a1 'sleep 30')"
    wait_state a1 running
    signed /shell-executions "$(shell_request b1 'cat /skills/demo/run.sh' "{\"skillPackagesRoot\": \"$root\"}")"
    assert_equal "$status_code $(jq_out .state)" "202 queued"
    # Accepted (checked then), changed now, in place and at the same size.
    printf 'echo evilish' > "$root/demo/run.sh"
    api POST "/shell-executions/a1/cancel?$owner"
    wait_state b1 failed
    assert_equal "$(jq_out .error)" "skillPackagesRoot failed its integrity check; upload the package again"
    assert_equal "$(jq -r 'has("startedAt")' <<<"$output")" false
    # The genuine bundle again: the next execution mounts it.
    api POST /skill-packages --data-binary "$bundle"
    assert_equal "$status_code $(jq_out .root)" "200 $root"
    signed /shell-executions "$(shell_request c1 'cat /skills/demo/run.sh' "{\"skillPackagesRoot\": \"$root\"}")"
    wait_state c1 completed
    assert_equal "$(jq_out .result.stdout)" "echo genuine"
}
