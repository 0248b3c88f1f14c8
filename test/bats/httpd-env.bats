#!/usr/bin/env bats
# The environment endpoints through a real sbx-httpd and sbx-env with the
# fake micromamba: setup at startup, create, install, revisions, snapshot
# bytes, delete, and a Python execution inside a named environment.

load httpd_helpers

setup() {
    export SCIENTIFIC_ENVS=1 SCIENCE_AGENT_PROVISIONER_PATH="$FIXTURES/fake-micromamba" \
        FAKE_MICROMAMBA_CHANNELS="$FIXTURES/channels"
    # sbx-httpd passes the fake's variable on (SBX_PASS_ENV, helpers.bash); sbx-env binds
    # its channels into the install sandboxes and passes it in.
    export SBX_ENV_INSTALL_READ_ONLY="$FIXTURES/channels" \
        SBX_ENV_INSTALL_PASS_ENV=FAKE_MICROMAMBA_CHANNELS
    httpd_setup
    chmod 755 "$WORK/data"
}
teardown() { httpd_teardown; }

wait_ready() {
    for _ in $(seq 100); do
        api GET /environment-setup
        [ "$(jq -r .state <<< "$output")" = ready ] && return 0
        sleep 0.1
    done
    fail "setup did not finish: $output"
}

@test "setup starts with the server; /health reports it; the environment endpoints answer with their status codes" {
    wait_ready
    run curl -sS "$BASE/health"
    [ "$(jq -c '.scientificEnvs | [.available, .enabled, .languages, .provisioner]' <<< "$output")" = '[true,true,["python"],"fake-micromamba"]' ]
    api POST /environment-setup --data-binary '{"confirmed":false}'
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Scientific environment setup requires explicit confirmation"}' ]
    api POST /environment-setup --data-binary '{"confirmed":true}'
    [ "$status_code" = 202 ] && [ "$(jq -r .state <<< "$output")" = ready ]
    api POST /environments --data-binary '{"name":"Analysis","language":"python"}'
    [ "$status_code" = 201 ] && [ "$(jq -r .kind <<< "$output")" = task ]
    id=$(jq -r .id <<< "$output")
    api POST "/environments/$id/install" --data-binary '{"packages":["requests"],"manager":"conda"}'
    [ "$status_code" = 201 ] && [[ "$(jq -r '.packages | join(" ")' <<< "$output")" == *requests=2.32.3* ]]
    [ "$(jq -c 'has("command")' <<< "$output")" = false ]
    rev=$(jq -r .id <<< "$output")
    api POST "/environments/$id/install" --data-binary '{"packages":["--channel=evil"]}'
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Invalid package specification: --channel=evil"}' ]
    api POST /environments/starter-python/install --data-binary '{"packages":["requests"]}'
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Starter environments are read-only; create a task environment first" ]
    api GET /environment-revisions
    [ "$status_code" = 200 ] && [ "$(jq length <<< "$output")" = 3 ]
    # A revision's command (host paths, argv) stays in sbx-env's records.
    [ "$(jq -c 'map(has("command")) | unique' <<< "$output")" = '[false]' ]
    [ -n "$(sbx-env revisions | jq -c 'map(select(has("command")))[]')" ]
    hash=$(jq -r ".[] | select(.id == \"$rev\") | .snapshot.hash" <<< "$output")
    run curl -sS -H "authorization: Bearer $TOKEN" "$BASE/environment-revisions/$rev/snapshot"
    [ "$(printf '%s\n' "$output" | sha256sum | cut -d' ' -f1)" = "$hash" ]
    # A Python execution in that revision sees its packages.
    signed /execute "$(shell_request py1 'import sys, requests; print(sys.executable, requests.__version__)' "{\"environmentRevisionId\":\"$rev\"}")"
    [ "$status_code" = 200 ] && [ "$(jq -r .stdout <<< "$output")" = "/opt/science-env/bin/python 2.32.3" ]
    [ "$(jq -r .environmentRevisionId <<< "$output")" = "$rev" ]
    api DELETE "/environments/$id"
    [ "$status_code" = 200 ] && [ "$output" = "{\"deleted\":\"$id\"}" ]
    api DELETE /environments/starter-python
    [ "$status_code" = 400 ] && [ "$output" = '{"error":"Starter environments cannot be deleted"}' ]
    api GET /environments/x
    [ "$status_code" = 404 ]
}

@test "install: runnerWorkspaceKey names the wheel's workspace and wins over workspaceRoot; lists over their caps are 400s naming the field, never cut" {
    wait_ready
    api POST /environments --data-binary '{"name":"Wheels","language":"python"}'
    id=$(jq -r .id <<< "$output")
    api POST "/environments/$id/install" --data-binary '{"packages":["pip"]}'
    assert_equal "$status_code" 201
    python3 - "$WORK/hello.whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("hello_wheel/__init__.py", "GREETING = 'hello'\n")
    z.writestr("hello_wheel-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: hello-wheel\nVersion: 1.0\n")
PY
    api PUT "/remote-workspace/file?workspace=wheels/k1&path=dist/hello_wheel-1.0-py3-none-any.whl" --data-binary @"$WORK/hello.whl"
    assert_equal "$status_code" 201
    api POST "/environments/$id/install" --data-binary "{\"manager\":\"pip\",\"runnerWorkspaceKey\":\"wheels/k1\",\"workspaceRoot\":\"$PROJECT\",\"packages\":[\"dist/hello_wheel-1.0-py3-none-any.whl\"]}"
    assert_equal "$status_code" 201
    assert_equal "$(jq -r '.localWheels[0].distribution' <<< "$output")" hello-wheel
    api POST "/environments/$id/install" --data-binary '{"manager":"pip","runnerWorkspaceKey":"no/such","packages":["dist/x.whl"]}'
    assert_equal "$status_code $output" '400 {"error":"Remote workspace does not exist"}'
    # 33 packages, 17 channels, a package that is not a string: refused whole.
    many=$(jq -cn '[range(33) | "pkg\(.)"]')
    api POST "/environments/$id/install" --data-binary "{\"packages\":$many}"
    assert_equal "$status_code $output" '400 {"error":"At least one package is required (at most 32 at a time)"}'
    channels=$(jq -cn '[range(17) | "conda-forge"]')
    api POST "/environments/$id/install" --data-binary "{\"packages\":[\"requests\"],\"channels\":$channels}"
    assert_equal "$status_code" 400
    assert_equal "$(jq -r .error <<< "$output")" "channels must be an array of 0 to 16 strings"
    api POST "/environments/$id/install" --data-binary '{"packages":["requests",7]}'
    assert_equal "$status_code $output" '400 {"error":"packages[1] must be a non-empty string"}'
    # At the caps, every package reaches sbx-env: the 32nd is validated too.
    specs=$(jq -cn '[range(31) | "requests"] + ["--channel=evil"]')
    api POST "/environments/$id/install" --data-binary "{\"packages\":$specs}"
    assert_equal "$status_code $output" '400 {"error":"Invalid package specification: --channel=evil"}'
}

@test "an execution holds its environment: an install waits until the run has ended" {
    wait_ready
    api POST /environments --data-binary '{"name":"Held","language":"python"}'
    id=$(jq -r .id <<< "$output")
    mkfifo -m 666 "$PROJECT/started"
    signed /shell-executions "$(shell_request held1 'echo > /workspace/started; sleep 1.5; python -I -c "import numpy; print(numpy.__version__)"' "{\"environmentId\":\"$id\"}")"
    [ "$status_code" = 202 ]
    await_fifo "$PROJECT/started"   # it runs, holding its environment
    api POST "/environments/$id/install" --data-binary '{"packages":["requests"]}'
    [ "$status_code" = 201 ]
    installed_at=$(jq -r .createdAt <<< "$output")
    api GET "/shell-executions/held1?sessionId=s1&agentId=main"
    [ "$(jq -r .state <<< "$output")" = completed ]
    [ "$(jq -r .result.stdout <<< "$output")" = 2.0.1 ]
    # The revision was recorded only after the execution had finished.
    [[ "$installed_at" > "$(jq -r .finishedAt <<< "$output")" ]]
}

@test "POST /execute with language r works once an R environment exists" {
    wait_ready
    signed /execute "$(shell_request r0 'cat("too early\n")' '{"language":"r"}')"
    [ "$status_code" = 400 ]
    api POST /environments --data-binary '{"name":"Stats","language":"r"}'
    [ "$status_code" = 201 ]
    rev=$(jq -r .currentRevisionId <<< "$output")
    signed /execute "$(shell_request r1 'cat("hello from R\n")' "{\"language\":\"r\",\"environmentRevisionId\":\"$rev\"}")"
    [ "$status_code" = 200 ]
    [ "$(jq -c '[.stdout, .language, .environmentRevisionId]' <<< "$output")" = "[\"hello from R\\n\",\"r\",\"$rev\"]" ]
    run curl -sS "$BASE/health"
    [ "$(jq -c .scientificEnvs.languages <<< "$output")" = '["python","r"]' ]
}

@test "a Node.js client's environment flow: setup, create, a wheel from a remote workspace key installed" {
    command -v node >/dev/null || fail "node is missing: make deps installs nodejs"
    run node "$BATS_TEST_DIRNAME/../node/env-flow.mjs" "$BASE" "$TOKEN" "$PROJECT"
    echo "$output"
    assert_success
    refute_output --partial "not ok"
    assert_output --partial "ok: install reads the wheel from runnerWorkspaceKey"
}

# no_token PID NAME: /proc/PID/environ does not hold the runner token (the
# daemon's own keeps the name, its value erased in place).
# Unprivileged, a helper that made itself non-dumpable has a root-owned
# environ nobody but root reads: that it is so is what is checked then.
no_token() {
    local env
    [ -e "/proc/$1" ] || fail "$2 ($1) is gone"
    if [ "$(id -u)" -ne 0 ] && [ ! -r "/proc/$1/environ" ]; then
        [ "$(stat -c %u "/proc/$1/environ")" = 0 ] || fail "$2 ($1): environ unreadable yet not root's"
        return 0
    fi
    env=$(tr '\0' '\n' < "/proc/$1/environ") || fail "$2 ($1) is gone"
    ! grep -q -e "$TOKEN" <<< "$env" || fail "$2 ($1) holds the runner token"
    [ "$1" = "$HTTPD_PID" ] || ! grep -q SCIENCE_AGENT_RUNNER_TOKEN <<< "$env" || fail "$2 ($1) was given the token's variable"
}

@test "no helper holds the runner token: the daemon, the egress gateway, the env installer and its sandbox" {
    wait_ready
    no_token "$HTTPD_PID" sbx-httpd
    # An execution's egress gateway outlives the run (it idles out later).
    access='{"mode":"domain-allowlist","allowedDomains":["api.test"],"allowPrivateNetwork":false}'
    signed /execute-shell "$(shell_request g1 true |
        jq -c ".permissionEpoch.networkPolicy = \"domain-allowlist\" | .permissionEpoch.networkAccess = $access")"
    [ "$status_code" = 200 ]
    gw=$(pgrep -f "sbx-egress gateway --socket $WORK/data/" | head -n 1)
    [ -n "$gw" ]
    no_token "$gw" "the execution's egress gateway"
    # An install held mid-way: sbx-env, its gateway, bwrap and the installer.
    api POST /environments --data-binary '{"name":"Held","language":"python"}'
    id=$(jq -r .id <<< "$output")
    httpd_stop
    mkfifo -m 0666 "$WORK/hang"
    httpd_start FAKE_MICROMAMBA_HANG_ON=tqdm FAKE_MICROMAMBA_HANGING_FIFO="$WORK/hang" \
        SBX_ENV_INSTALL_PASS_ENV=FAKE_MICROMAMBA_CHANNELS,FAKE_MICROMAMBA_HANG_ON,FAKE_MICROMAMBA_HANGING_FIFO \
        SBX_ENV_INSTALL_READ_ONLY="$FIXTURES/channels:$WORK"
    api POST "/environments/$id/install" --data-binary '{"packages":["tqdm"],"manager":"conda"}' &
    client=$!
    await_fifo "$WORK/hang"
    env_pid=$(pgrep -f "sbx-env install .*$id" | head -n 1)
    installer=$(pgrep -f "^python3 .*fake-micromamba --no-rc install .*$id" | head -n 1)
    bwrap_pid=$(pgrep -f "bwrap .*fake-micromamba --no-rc install .*$id" | head -n 1)
    env_gw=$(pgrep -P "$env_pid" -f "sbx-egress gateway --socket $WORK/data/scientific-envs/tmp/gw-" | head -n 1)
    [ -n "$env_pid" ] && [ -n "$installer" ] && [ -n "$bwrap_pid" ] && [ -n "$env_gw" ]
    for p in "$env_pid:sbx-env" "$env_gw:the install gateway" "$bwrap_pid:bwrap" "$installer:the installer"; do
        no_token "${p%%:*}" "${p#*:}"
    done
    # The installer runs as the install user, never root.
    [ "$(stat -c %u "/proc/$installer")" -ne 0 ]
    kill -9 "$installer"
    wait "$client" || true
}

@test "a workspace wheel whose .pth runs, installed through the API: only in the install sandbox, as the install user" {
    wait_ready
    api POST /environments --data-binary '{"name":"Wheels","language":"python"}'
    id=$(jq -r .id <<< "$output")
    api POST "/environments/$id/install" --data-binary '{"packages":["pip"],"manager":"conda"}'
    [ "$status_code" = 201 ]
    mkdir -p "$PROJECT/dist"
    python3 - "$PROJECT/dist/evil-1.0-py3-none-any.whl" "$WORK/host-marker" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("evil.pth", "import os, sys; open(os.path.join(sys.prefix, 'pth-uid'), 'w').write(str(os.getuid()))\n"
               "import os, sys; open(os.path.join(sys.prefix, 'pth-token'), 'w').write(os.environ.get('SCIENCE_AGENT_RUNNER_TOKEN', 'none'))\n"
               "import os; open(%r, 'w')\n" % sys.argv[2])
    z.writestr("evil-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
PY
    api POST "/environments/$id/install" --data-binary "$(jq -cn --arg ws "$PROJECT" \
        '{packages: ["dist/evil-1.0-py3-none-any.whl"], manager: "pip", workspaceRoot: $ws}')"
    [ "$status_code" = 201 ] || fail "install: $status_code $output"
    prefix=$(sbx-env resolve --revision "$(jq -r .id <<< "$output")" --language python | jq -r .prefix)
    # The .pth ran (the inventory started the prefix's Python), as the install user, without the token.
    uid=$(cat "$prefix/pth-uid")
    [ "$uid" -ne 0 ] || fail "the .pth ran as root"
    [ "$(id -u)" -ne 0 ] || [ "$uid" != "$(id -u)" ]
    assert_equal "$(cat "$prefix/pth-token")" none
    [ ! -e "$WORK/host-marker" ]
    # The prefix is root's again: an execution cannot change it, nor can the install user later.
    [ "$(id -u)" -ne 0 ] || assert_equal "$(find "$prefix" ! -uid 0 | head -n 3)" ""
}
