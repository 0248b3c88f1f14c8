#!/usr/bin/env bats
# contrib/: socket activation as systemd does it, the bash completions, the
# example pipelines, and the deployment files' syntax.

load httpd_helpers

CONTRIB="$BATS_TEST_DIRNAME/../../contrib"

setup() {
    launch_setup
    export SCIENCE_AGENT_DATA_DIR="$WORK/data" SCIENCE_AGENT_RUNNER_TOKEN=t SCIENTIFIC_ENVS=0
}

teardown() {
    [ -z "${pid:-}" ] || kill "$pid" 2>/dev/null || true
    launch_teardown
}

@test "socket activation: sbx-httpd serves on the socket on fd 3 and leaves HOST/PORT alone" {
    mkfifo "$WORK/port" "$WORK/ready"
    # Both FIFOs held open here first, so the server's opens never block.
    exec 7<>"$WORK/port" 8<>"$WORK/ready"
    SCIENCE_AGENT_RUNNER_PORT=1 "$FIXTURES/socket-activate.py" 127.0.0.1 0 -- \
        sbx-httpd --ready-fd 4 >"$WORK/port" 4>"$WORK/ready" 2>"$WORK/err" &
    pid=$!
    read -r -t 30 -u 7 port
    read -r -t 30 -u 8 ready
    exec 7<&- 8<&-
    assert_equal "$(jq -r .port <<<"$ready")" "$port"
    run curl -sS "http://127.0.0.1:$port/health"
    assert_equal "$(jq_out .status)" ok
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer t" "http://127.0.0.1:$port/status"
    assert_output 200
}

@test "a socket that is not for this process is ignored; two sockets are refused" {
    LISTEN_PID=1 LISTEN_FDS=1 SCIENCE_AGENT_RUNNER_PORT=0 run --separate-stderr timeout 5 sbx-httpd --help
    assert_success
    mkfifo "$WORK/port"
    LISTEN_FDS=2 "$FIXTURES/socket-activate.py" 127.0.0.1 0 -- env LISTEN_FDS=2 sbx-httpd > "$WORK/port" 2>"$WORK/err" &
    pid=$!
    read -r port < "$WORK/port"
    wait "$pid" || true
    pid=
    grep -q "LISTEN_FDS=2: sbx-httpd takes exactly one socket" "$WORK/err"
}

@test "bash completion offers each program's options and commands, read from its --help" {
    run bash -c 'source "$1"; for t in "sbx-launch --dr" "sbx-npu fr" "sbx-broker su" "sbx-egress gateway --upstream-p" "sbx-snap co"; do
        COMP_WORDS=($t); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _sbx; echo "${COMPREPLY[*]}"; done' _ "$CONTRIB/completions/sbx.bash"
    assert_success
    assert_output "$(printf '%s\n' --dry-run fragment submit --upstream-proxy commit)"
}

@test "example pipelines: probe → spec → launch, request → run → verify, an egress decision" {
    run --separate-stderr "$CONTRIB/examples/probe-spec-launch.sh" "$WS" /bin/sh -c 'echo from-sandbox; id -u'
    assert_success
    assert_equal "$(head -1 <<<"$output")" from-sandbox
    assert_equal "$(jq -r .seccompProfile <<<"$stderr")" baseline
    run --separate-stderr "$CONTRIB/examples/run-and-verify.sh" "$WS" 'echo hi > made.txt; echo done'
    assert_success
    assert_equal "$(head -1 <<<"$output" | jq -r .ok)" true
    assert_equal "$(tail -1 <<<"$output")" '{"exitCode":0,"stdout":"done\n","createdFiles":["made.txt"]}'
    printf '{"mode":"domain-allowlist","allowedDomains":["pypi.org"]}' > "$WORK/policy.json"
    run --separate-stderr "$CONTRIB/examples/egress-check.sh" "$WORK/policy.json" pypi.org:443 --resolve pypi.org:443:151.101.0.223
    assert_success
    assert_equal "$(jq_out .allowed)" true
    run --separate-stderr "$CONTRIB/examples/egress-check.sh" "$WORK/policy.json" evil.example:443
    assert_equal "$(jq_out .allowed)" false
}

@test "deployment files: Slurm script, Kubernetes manifests and seccomp profile, compose file, systemd units" {
    bash -n "$CONTRIB/slurm/sbx-array.sbatch"
    run python3 -c 'import sys, yaml; print(" ".join(d["kind"] for d in yaml.safe_load_all(open(sys.argv[1]))))' "$CONTRIB/kubernetes/sbx-httpd.yaml"
    assert_output "ConfigMap DaemonSet Job"
    # The bootstrap-mode Job: sbx-run with the three variables (the nonce
    # from a Secret), root for the uid split, the 7 capabilities sbx-run
    # uses, a grace period that covers the 15 s deadline reserve.
    run python3 - "$CONTRIB/kubernetes/sbx-job.yaml" <<'PY'
import sys, yaml
docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1]))}
job = docs["Job"]["spec"]; pod = job["template"]["spec"]; c = pod["containers"][0]; sc = c["securityContext"]
env = {e["name"]: e for e in c["env"]}
print(sorted(docs), job["backoffLimit"], pod["restartPolicy"], c["command"], sorted(n for n in env if n.startswith("MAPI_")))
print(env["MAPI_NONCE"]["valueFrom"]["secretKeyRef"]["name"] == docs["Secret"]["metadata"]["name"],
      sc["runAsUser"], sc["privileged"], sc["procMount"], sc["seccompProfile"], sc["appArmorProfile"]["type"])
print(sc["capabilities"]["drop"], sorted(sc["capabilities"]["add"]))
print(pod["terminationGracePeriodSeconds"] > 15, job["activeDeadlineSeconds"] > 15,
      sorted(m["mountPath"] for m in c["volumeMounts"]), all("emptyDir" in v for v in pod["volumes"]))
# The podFailurePolicy: sbx-run's exit codes by failure class, on its container.
rules = job["podFailurePolicy"]["rules"]
print([(r["action"], r["onExitCodes"]["values"]) for r in rules if "onExitCodes" in r],
      {r["onExitCodes"]["containerName"] for r in rules if "onExitCodes" in r} == {c["name"]},
      [(r["action"], [p["type"] for p in r["onPodConditions"]]) for r in rules if "onPodConditions" in r])
PY
    assert_success
    assert_output "['Job', 'Secret'] 0 Never ['/usr/local/bin/sbx-run'] ['MAPI_BOOTSTRAP_URL', 'MAPI_NONCE', 'MAPI_RUN_ID']
True 0 False Unmasked {'type': 'Localhost', 'localhostProfile': 'profiles/sbx-userns.json'} Unconfined
['ALL'] ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETPCAP', 'SETUID']
True True ['/tmp', '/var/lib/sbx', '/workspace'] True
[('FailJob', [1, 2, 3, 6, 7, 8, 9, 10]), ('Count', [4, 5])] True [('Ignore', ['DisruptionTarget'])]"
    # Every non-zero exit code sbx-run has is in exactly one rule.
    codes=$(sbx-run --help | sed -n 's/^  \([1-9][0-9]*\)  .*/\1/p' | sort -n | tr '\n' ' ')
    ruled=$(python3 -c 'import sys, yaml
d = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "Job"][0]
print(" ".join(map(str, sorted(v for r in d["spec"]["podFailurePolicy"]["rules"] if "onExitCodes" in r for v in r["onExitCodes"]["values"]))))' \
        "$CONTRIB/kubernetes/sbx-job.yaml")
    assert_equal "$ruled " "$codes"
    # The Slurm script keeps sbx-run's status (no "|| true") and exits with it.
    run grep -E '^sbx-run .*\|\| *true' "$CONTRIB/slurm/sbx-array.sbatch"
    assert_failure 1
    grep -q '^exit "\$status"$' "$CONTRIB/slurm/sbx-array.sbatch"
    # The compose file: the strong /proc shape without privileged mode.
    run python3 -c 'import sys, yaml; s = yaml.safe_load(open(sys.argv[1]))["services"]["sbx-httpd"]
print(s["image"], s["privileged"], s["security_opt"], s["ports"])' "$CONTRIB/compose/sbx-httpd.yaml"
    assert_success
    assert_output "localhost/sbx:0.1.0 False ['systempaths=unconfined', 'seccomp=../kubernetes/sbx-userns.json', 'apparmor=unconfined'] ['127.0.0.1:4311:4311']"
    [ -f "$CONTRIB/compose/../kubernetes/sbx-userns.json" ]
    run jq -r '.defaultAction, ([.syscalls[].names[]] | index("pivot_root"))' "$CONTRIB/kubernetes/sbx-userns.json"
    assert_output "$(printf 'SCMP_ACT_ALLOW\nnull')"
    grep -q '^ListenStream=127.0.0.1:4311' "$CONTRIB/systemd/sbx-httpd.socket"
    grep -q '^Requires=sbx-httpd.socket' "$CONTRIB/systemd/sbx-httpd.service.d/socket-activation.conf"
    grep -q '^ExecStart=/usr/local/bin/sbx-httpd' "$CONTRIB/systemd/sbx-httpd.service"
}
