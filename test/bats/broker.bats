#!/usr/bin/env bats
# sbx-broker from a shell: the allowlist, templates at job start, the
# filtered environment, FIFO order, logs and their budget, artefact
# manifests, cancel of queued and running jobs, restart, session checks.

load helpers

setup() {
    WORK=$(mktemp -d /tmp/sbx-broker-test.XXXXXX)
    DATA="$WORK/data"
    WS="$DATA/projects/p1"
    mkdir -p "$WS"
    export SBX_DATA_DIR="$DATA"
    export SCIENCE_AGENT_NPU_BROKER=1
    export SCIENCE_AGENT_NPU_WORKLOAD_CONFIG="$FIXTURES/npu-workloads.test.json"
    stage_broker_repo "$WORK/repo"
    export SCIENCE_AGENT_NPU_PYTHON=/usr/bin/python3
    export SBX_TEST_FIFO="$WORK/fifo"
    mkfifo -m 0666 "$SBX_TEST_FIFO"
    # As root, jobs run as the workspace's owner, else SBX_BROKER_RUN_AS:
    # never root. The job's uid reaches the test's files through WORK.
    if [ "$(id -u)" -eq 0 ]; then
        id sbxtest >/dev/null 2>&1 || skip "needs the sbxtest user (test/run.sh creates it)"
        export SBX_BROKER_RUN_AS=sbxtest
        chmod 711 "$WORK"
        chown sbxtest: "$WS"
    fi
}

# own DIR: as root, DIR belongs to the job's user (a workspace an execution ran in).
own() { [ "$(id -u)" -ne 0 ] || chown sbxtest: "$@"; }

teardown() {
    rm -rf "$WORK"
}

# submit WORKLOAD ID [EXTRA-JSON]: queues a job (no drainer), $output the job.
submit() {
    run --separate-stderr sbx-broker --no-drain submit - <<<"$(jq -cn --arg w "$1" --arg id "$2" --arg ws "$WS" \
        --argjson extra "${3:-{\}}" '{workloadId: $w, sessionId: "s1", workspaceRoot: $ws, jobId: $id} + $extra')"
}

job() { sbx-broker --session s1 get "$1"; }
field() { job "$1" | jq -r "$2"; }
err() { jq -r .message <<<"$stderr"; }

@test "workloads: descriptors from the allowlist, inputs inferred, the revision need derived" {
    run --separate-stderr sbx-broker workloads
    assert_success
    assert_equal "$(jq_out '.enabled, .queueConcurrency' | tr '\n' ' ')" "true 1 "
    assert_equal "$(jq -c '.workloads[0]' <<<"$output")" '{"description":"prints JSON","id":"test.smoke","label":"Smoke","phase":"project","requiredInputs":[]}'
    assert_equal "$(jq -c '.workloads[] | select(.id == "test.config") | .requiredInputs' <<<"$output")" '["configPath"]'
    assert_equal "$(jq -c '.workloads[] | select(.id == "test.managed") | .requiresEnvironmentRevision' <<<"$output")" true
    assert_equal "$(jq -c '.workloads[] | select(.id == "test.hold") | has("requiresEnvironmentRevision")' <<<"$output")" false
    # The built-in allowlist: both need a revision, only Protenix a config.
    SCIENCE_AGENT_NPU_WORKLOAD_CONFIG= run --separate-stderr sbx-broker workloads
    assert_equal "$(jq -c '[.workloads[] | [.id, .requiresEnvironmentRevision, .requiredInputs]]' <<<"$output")" \
        '[["npu.smoke_test",true,[]],["antibody.protenix.v1",true,["configPath"]]]'
    SCIENCE_AGENT_NPU_BROKER=0 run --separate-stderr sbx-broker workloads
    assert_equal "$(jq -c '[.enabled, .workloads]' <<<"$output")" '[false,[]]'
}

@test "a bad allowlist is refused with the upstream message" {
    bad() { printf '%s' "$1" > "$WORK/wl.json"; run --separate-stderr sbx-broker --config "$WORK/wl.json" workloads; assert_failure 2; assert_equal "$(err)" "$2"; }
    bad '{}' "NPU workload config must contain a workloads array: $WORK/wl.json"
    bad '{"workloads":[{"id":"Bad","label":"l","description":"d","command":{"program":"x"}}]}' 'NPU workload id must match ^[a-z0-9][a-z0-9._-]*$: Bad'
    bad '{"workloads":[{"id":"a","label":"l","description":"d","command":{"program":"x"}},{"id":"a","label":"l","description":"d","command":{"program":"x"}}]}' 'Duplicate NPU workload id in config: a'
    bad '{"workloads":[{"id":"a","label":"l","description":"d"}]}' 'NPU workload config requires command object'
    bad '{"workloads":[{"id":"a","label":"l","description":"d","command":{"program":"x","args":"y"}}]}' 'NPU workload config command args must be an array: a'
    bad '{"workloads":[{"id":"a","label":"l","description":"d","command":{"program":"x","args":["${input:other}"]}}]}' 'Unsupported required input for a: other'
}

@test "a job end to end: argv without a shell, filtered environment, HOME, logs, created files inside only, audit" {
    export ASCEND_VISIBLE=1 ASCEND_API_KEY=secret MS_SECRET_TOKEN=x UNRELATED=y PYTHONPATH=/host/py
    submit test.smoke j1
    assert_success
    assert_equal "$(jq_out '.state, .id, .workspaceRoot' | tr '\n' ' ')" "queued j1 $WS "
    run --separate-stderr sbx-broker drain
    assert_success
    run job j1
    assert_equal "$(jq_out '.state, .exitCode' | tr '\n' ' ')" "succeeded 0 "
    line=$(jq_out .logs.stdout)
    assert_equal "$(jq -r '.ok, .cwd, (.argv | join(" "))' <<<"$line" | tr '\n' '|')" "true|$WS|smoke $WS|"
    home="$DATA/npu-jobs/homes/j1"
    assert_equal "$(jq -r '.env | [.ASCEND_VISIBLE, .HOME, .TMPDIR, .PYTHONNOUSERSITE, .SCIENCE_AGENT_NPU_WORKSPACE, .SCIENCE_AGENT_NPU_BROKER_MODE, .ANTIBODY_ALLOW_HOST_NPU_PYTHON, .PYTHONPATH] | join("|")' <<<"$line")" \
        "1|$home/home|$home/tmp|1|$WS|1|1|/host/py"
    assert_equal "$(jq -c '.env | [has("ASCEND_API_KEY"), has("MS_SECRET_TOKEN"), has("UNRELATED")]' <<<"$line")" '[false,false,false]'
    # The home is the runner's, per job, and gone with it; none in the workspace.
    [ ! -e "$home" ] && [ ! -e "$WS/.npu-home" ]
    # Never root: the workspace's owner as root, the caller otherwise.
    assert_equal "$(jq -r .uid <<<"$line")" "$(stat -c %u "$WS")"
    assert_equal "$(stat -c %u "$WS/made.txt")" "$(stat -c %u "$WS")"
    assert_equal "$(jq_out .logs.stderr)" "to stderr"
    assert_equal "$(jq -c .createdFiles <<<"$output")" '["made.txt"]'
    assert_equal "$(jq_out '.audit.argv | join(" ")')" "$(readlink -f /usr/bin/python3) -s $SBX_BROKER_ROOT/test/fixtures/npu-workload.py smoke $WS"
    assert_equal "$(jq_out '.audit.env | has("UNRELATED")')" false
    run --separate-stderr sbx-broker --session s1 result j1
    assert_equal "$(jq_out '.job.id, (.job.createdFiles | length)' | tr '\n' ' ')" "j1 1 "
}

@test "hostile workspace: a planted .pth never runs, the job is never root, inputs are read from what was checked" {
    [ "$(id -u)" -eq 0 ] || skip "the uid switch needs root"
    marker="$WORK/pth-ran"
    # What a workload could plant: user site-packages under every HOME it can reach.
    for home in "$WS/.npu-home" "$WS"; do
        site="$home/.local/lib/$(python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')/site-packages"
        mkdir -p "$site"
        echo "import os; open('$marker', 'w').write(str(os.getuid()))" > "$site/evil.pth"
    done
    chmod 777 "$WORK"
    chown -R sbxtest: "$WS"
    echo '{"real": 1}' > "$WS/cfg.json"
    chown sbxtest: "$WS/cfg.json"
    submit test.smoke h1
    submit test.config h2 '{"inputs": {"configPath": "cfg.json"}}'
    assert_success
    # Swapped for symlinks after the check: outside is refused, inside read from the fd.
    submit test.config h3 '{"inputs": {"configPath": "cfg.json"}}'
    echo '{"first": 0}' > "$WS/cfg2.json"
    submit test.config h4 '{"inputs": {"configPath": "cfg2.json"}}'
    assert_success
    echo '{"inside": 2}' > "$WS/other.json"
    ln -sf other.json "$WS/cfg2.json"
    ln -sf /etc/shadow "$WS/cfg.json.tmp" && mv -T "$WS/cfg.json.tmp" "$WS/cfg.json"
    SCIENCE_AGENT_RUNNER_TOKEN=runner-token-789 run --separate-stderr sbx-broker drain
    assert_success
    [ ! -e "$marker" ] || fail "a planted .pth ran as uid $(cat "$marker")"
    # The job's environment (what /proc/<pid>/environ held) has no runner token.
    ! field h1 '.logs.stdout' | head -n 1 | grep -q -e runner-token-789 -e SCIENCE_AGENT_RUNNER_TOKEN
    assert_equal "$(field h1 .state)" succeeded
    assert_equal "$(field h1 '.logs.stdout' | head -n 1 | jq -r .uid)" "$(id -u sbxtest)"
    assert_equal "$(field h3 '.state, .error' | tr '\n' '|')" "failed|configPath must resolve inside the NPU job workspace|"
    line=$(field h4 .logs.stdout)
    assert_equal "$line" "$DATA/npu-jobs/homes/h4/inputs/cfg2.json {\"inside\": 2}"
}

@test "what a job leaves behind (a setsid'd grandchild) is killed with it" {
    [ "$(id -u)" -eq 0 ] || skip "a job's cgroup needs root"
    submit test.linger l1
    assert_success
    run --separate-stderr sbx-broker drain
    assert_success
    assert_equal "$(field l1 .state)" succeeded
    pid=$(cat "$WS/linger.pid")
    [ -n "$pid" ]
    eventually bash -c "! kill -0 $pid 2>/dev/null" || { kill -9 "$pid"; fail "the job's grandchild $pid outlived it"; }
}

@test "jobs run one at a time in submission order" {
    export SBX_TEST_ORDER="$WORK/order"
    install -m 0666 /dev/null "$SBX_TEST_ORDER"
    for p in c a b; do
        mkdir -p "$DATA/projects/$p"
        own "$DATA/projects/$p"
        WS="$DATA/projects/$p" submit test.order "job-$p"
        assert_success
    done
    run --separate-stderr sbx-broker drain
    assert_success
    assert_equal "$(cat "$SBX_TEST_ORDER")" "$(printf '%s\n' "$DATA/projects/c" "$DATA/projects/a" "$DATA/projects/b")"
    run --separate-stderr sbx-broker --session s1 list
    assert_equal "$(jq -c '[.[] | [.id, .state, .workspaceRoot, .logs.stdout]]' <<<"$output")" \
        '[["job-c","succeeded","",""],["job-a","succeeded","",""],["job-b","succeeded","",""]]'
}

@test "failures: exit codes, template errors at start, repo paths outside, a program that is not there" {
    submit test.fail f1
    submit test.template t1
    assert_success
    submit test.escape e1
    submit test.config c1 '{"inputs": {"configPath": "nope.json"}}'
    assert_failure 2
    assert_equal "$(err)" "configPath must resolve inside the NPU job workspace"
    run --separate-stderr sbx-broker drain
    assert_equal "$(field f1 '.state, .exitCode, .error' | tr '\n' '|')" "failed|7|NPU workload exited with code 7|"
    assert_equal "$(field t1 '.state, .error' | tr '\n' '|')" 'failed|Environment variable SBX_TEST_UNSET_VARIABLE is required by NPU workload command template: ${env:SBX_TEST_UNSET_VARIABLE}|'
    assert_equal "$(field e1 '.error')" 'repo: path must resolve inside the repository in NPU workload config: ${repo:../../etc/passwd}'
}

@test "submit checks, in upstream order" {
    run --separate-stderr sbx-broker --no-drain submit - <<<'{"sessionId":"s1"}'
    assert_equal "$(err)" "workloadId is required"
    submit test.nope x
    assert_equal "$(err)" "Unknown NPU workload: test.nope"
    run --separate-stderr sbx-broker --no-drain submit - <<<"{\"workloadId\":\"test.smoke\",\"workspaceRoot\":\"$WS\"}"
    assert_equal "$(err)" "sessionId is required"
    submit test.managed m1
    assert_equal "$(err)" "environmentRevisionId is required for this NPU workload"
    WS=$WORK submit test.smoke w1
    assert_equal "$(err)" "NPU workspaceRoot must be inside the configured data/projects directory"
    ln -s /etc "$DATA/projects/link"
    WS="$DATA/projects/link" submit test.smoke w2
    assert_equal "$(err)" "NPU workspaceRoot must be inside the configured data/projects directory"
    submit test.smoke dup
    assert_success
    submit test.smoke dup
    assert_equal "$(err)" "NPU job already exists: dup"
    submit test.smoke ../x
    assert_failure 2
    run --separate-stderr sbx-broker --no-drain submit - <<<"{\"workloadId\":\"test.smoke\",\"sessionId\":\"s1\",\"workspaceRoot\":\"$WS\"}"
    assert_success
    [[ "$(jq_out .id)" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
    SCIENCE_AGENT_NPU_BROKER=no submit test.smoke off
    assert_equal "$(err)" "NPU Broker is disabled"
}

@test "the AF3-intent check walks objects, not arrays; an unparsable config passes" {
    cfg() { printf '%s' "$2" > "$WS/$1"; submit test.config "job-$1" "{\"inputs\": {\"configPath\": \"$1\"}}"; }
    cfg a.json '{"run": {"Model-Backend": "AlphaFold3"}}'
    assert_failure 2
    assert_equal "$(err)" "Configuration appears to target AlphaFold3; the built-in NPU Broker allowlist only exposes antibody.protenix.v1"
    cfg b.json '{"deep": {"AF3_DB_DIR": null}}'
    assert_failure 2
    cfg c.json '{"stages": [{"backend": "af3"}], "backend": "protenix"}'
    assert_success
    cfg d.json 'not json'
    assert_success
    cfg e.json '{}'
    submit test.config abs '{"inputs": {"configPath": "/etc/passwd"}}'
    assert_equal "$(err)" "configPath must be a workspace-relative path"
}

@test "cancel: a queued job at once; a running one gets SIGTERM; one that ignores it gets SIGKILL" {
    submit test.hold run1
    submit test.smoke queued1
    run --separate-stderr sbx-broker --session s1 cancel queued1
    assert_equal "$(jq_out .state)" cancelled
    sbx-broker drain 3>&- &
    drainer=$!
    await_fifo "$SBX_TEST_FIFO"
    run --separate-stderr sbx-broker --session s1 cancel run1
    assert_equal "$(jq_out .state)" running
    wait "$drainer"
    assert_equal "$(field run1 '.state, .exitCode, .logs.stdout' | tr '\n' '|')" "cancelled|3|got TERM||"
    [ ! -e "$WS/made.txt" ]
    submit test.stubborn run2
    sbx-broker drain 3>&- &
    drainer=$!
    await_fifo "$SBX_TEST_FIFO"
    sbx-broker --session s1 cancel run2 >/dev/null
    wait "$drainer"
    assert_equal "$(field run2 '.state, .exitCode' | tr '\n' '|')" "cancelled|null|"
    # Terminal jobs come back unchanged; another session's cancel is refused.
    assert_equal "$(sbx-broker --session s1 cancel run2 | jq -r .state)" cancelled
    run --separate-stderr sbx-broker --session s2 cancel run2
    assert_equal "$(err)" "NPU job not found in this Session"
}

@test "a workload's timeout fails the job; output beyond the shared budget is dropped and flagged" {
    submit test.timeout slow
    export SBX_TEST_SPAM_FALLBACK=5000
    submit test.spam loud
    sbx-broker --log-budget 6000 drain 3>&- &
    drainer=$!
    await_fifo "$SBX_TEST_FIFO"
    wait "$drainer"
    assert_equal "$(field slow '.state, .error' | tr '\n' '|')" "failed|NPU workload exceeded its timeout of 1 s|"
    run --separate-stderr sbx-broker --session s1 logs loud
    assert_equal "$(jq_out '.truncated, ((.stdout | length) + (.stderr | length))' | tr '\n' ' ')" "true 6000 "
}

@test "restart: queued and running jobs become interrupted and are never re-run" {
    submit test.hold held
    submit test.smoke waiting
    sbx-broker drain 3>&- &
    drainer=$!
    await_fifo "$SBX_TEST_FIFO"
    # recover leaves a live drainer's jobs alone.
    run --separate-stderr sbx-broker recover
    assert_equal "$(jq_out .interrupted)" 0
    kill -9 "$drainer"
    wait "$drainer" || true
    run --separate-stderr sbx-broker recover
    assert_equal "$(jq_out .interrupted)" 2
    for id in held waiting; do
        assert_equal "$(field "$id" '.state, .error' | tr '\n' '|')" "interrupted|Runner restarted before the NPU job completed|"
    done
    run --separate-stderr sbx-broker drain
    [ ! -e "$WS/made.txt" ]
}

@test "reads: the session is required and checked; unknown ids differ per command; result waits for the end" {
    submit test.smoke r1
    run --separate-stderr sbx-broker get r1
    assert_equal "$(err)" "session_id is required for NPU job access"
    run --separate-stderr sbx-broker --session s2 get r1
    assert_equal "$(err)" "NPU job not found in this Session"
    run --separate-stderr sbx-broker --session s1 result r1
    assert_equal "$(jq -r .code <<<"$stderr") $(err)" "not-terminal NPU job is not terminal"
    run --separate-stderr sbx-broker --session s1 get nope
    assert_equal "$(jq -r .code <<<"$stderr") $(err)" "not-found NPU job not found"
    run --separate-stderr sbx-broker --session s1 result nope
    assert_equal "$(jq -r .code <<<"$stderr")" not-found
    run --separate-stderr sbx-broker --session s1 logs nope
    assert_equal "$(jq -r .code <<<"$stderr") $(err)" "unknown Unknown NPU job: nope"
    run --separate-stderr sbx-broker --session s2 list
    assert_equal "$output" "[]"
    run --separate-stderr sbx-broker --active list
    assert_equal "$(jq -c '[.[] | [.id, .state]]' <<<"$output")" '[["r1","queued"]]'
}

@test "a managed workload runs the revision's interpreter with its site-packages first on PYTHONPATH" {
    export SCIENCE_AGENT_PROVISIONER_PATH="$FIXTURES/fake-micromamba" FAKE_MICROMAMBA_CHANNELS="$FIXTURES/channels" \
        SBX_ENV_INSTALL_READ_ONLY="$FIXTURES/channels" \
        SBX_ENV_INSTALL_PASS_ENV=FAKE_MICROMAMBA_CHANNELS SBX_ENV_RUN_AS=sbxtest
    unset SCIENCE_AGENT_PACKAGE_CACHE_DIR SCIENTIFIC_ENVS SCIENCE_AGENT_SCIENTIFIC_CHANNELS
    run --separate-stderr sbx-env setup --wait
    assert_success
    rev=$(sbx-env list | jq -r '.[] | select(.id == "starter-python") | .currentRevisionId')
    submit test.managed m0 '{"environmentRevisionId": "no-such-revision"}'
    assert_failure 2
    assert_equal "$(err)" "Unknown environment revision; select a current environment"
    export PYTHONPATH=/host/py
    submit test.managed m1 "{\"environmentRevisionId\": \"$rev\"}"
    assert_success
    assert_equal "$(jq_out .environmentRevisionId)" "$rev"
    run --separate-stderr sbx-broker drain
    run job m1
    assert_equal "$(jq_out '.state, .logs.stdout' | tr '\n' '|')" "succeeded|1||"
    prefix=$(sbx-env resolve --revision "$rev" --language python | jq -r .prefix)
    assert_equal "$(jq_out '.audit.argv[0]')" "$(readlink -f "$prefix/bin/python")"
    assert_equal "$(jq_out '.audit.env.PYTHONPATH')" "$(readlink -f "$prefix"/lib/python3*/site-packages):/host/py"
}
