#!/usr/bin/env bats
# GET /metrics (sbx's extension) through a real sbx-httpd, read with
# Prometheus' own parser (python3-prometheus-client): after a mixed load
# the counters are the runs made, the histograms agree with them, no label
# carries an id; the bearer guards it; SBX_METRICS_LISTEN serves it alone.

load httpd_helpers

# Debian's python3 holds the parser (mk/deps.sh), whatever python3 PATH finds.
PY=/usr/bin/python3

setup() {
    httpd_setup
    $PY -c 'import prometheus_client.parser' 2>/dev/null || fail "python3-prometheus-client is not installed (make deps)"
}
teardown() { httpd_teardown; }

owner='sessionId=s1&agentId=main'

# scrape [URL-BASE]: GET /metrics with the bearer into $WORK/metrics.txt,
# parsed by text_string_to_metric_families into $WORK/metrics.json:
# {families: {name: type}, samples: [{name, labels, value}]}.
scrape() {
    curl -sS -f -o "$WORK/metrics.txt" -H "authorization: Bearer $TOKEN" "${1:-$BASE}/metrics"
    $PY - "$WORK/metrics.txt" > "$WORK/metrics.json" <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {"families": {}, "samples": []}
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    out["families"][fam.name] = fam.type
    out["samples"] += [{"name": s.name, "labels": s.labels, "value": s.value} for s in fam.samples]
print(json.dumps(out))
PY
}

# value NAME [LABELS-JSON]: the sum of NAME's samples whose labels include
# LABELS (each equal), "absent" when none has them.
value() {
    jq -r --arg n "$1" --argjson l "${2:-{\}}" '[.samples[] | select(.name == $n)
        | select(.labels as $have | $l | to_entries | all(.value == $have[.key])) | .value] as $v
        | if $v == [] then "absent" else ($v | add) end' "$WORK/metrics.json"
}

# until_value NAME LABELS WANT [BASE]: scrapes until NAME is WANT (bounded):
# what finishes after an answer (a run let go) shows a moment later.
until_value() {
    for _ in $(seq 100); do
        scrape "${4:-$BASE}"
        [ "$(value "$1" "$2")" = "$3" ] && return 0
        sleep 0.1
    done
    echo "$1 $2 stayed $(value "$1" "$2"), not $3" >&2
    return 1
}

@test "after a mixed load the counters are the runs made, the histograms agree, no label names an execution" {
    # Run directories kept: their result.json is what sbx-run reported.
    httpd_stop
    httpd_start SCIENCE_AGENT_RUN_RETENTION_SECONDS=3600
    for id in ok1 ok2 ok3; do
        signed /execute-shell "$(shell_request $id 'echo ok')"
        [ "$status_code" = 200 ] && [ "$(jq -r .exitCode <<< "$output")" = 0 ]
    done
    signed /execute-shell "$(shell_request fail1 'exit 1')"
    [ "$status_code" = 200 ] && [ "$(jq -r .exitCode <<< "$output")" = 1 ]
    signed /execute-shell "$(shell_request slow1 'sleep 30' '{"executionTimeoutMs":500}')"
    [ "$status_code" = 400 ] && [ "$(jq -r .error <<< "$output")" = "Shell execution timed out after 500 ms" ]
    signed /shell-executions "$(shell_request mg1 'echo managed')"
    wait_state mg1 completed
    signed /shell-executions "$(shell_request mg2 'exit 3')"
    wait_state mg2 failed
    # One cancelled while it runs, one in line behind it (never runs).
    signed /shell-executions "$(shell_request mc1 'sleep 30')"
    wait_state mc1 running
    signed /shell-executions "$(shell_request mq1 'touch never')"
    api POST "/shell-executions/mq1/cancel?$owner"
    wait_state mq1 cancelled
    api POST "/shell-executions/mc1/cancel?$owner"
    wait_state mc1 cancelled
    # A plain upload of 1000 bytes.
    head -c 1000 /dev/urandom > "$WORK/up.bin"
    api PUT "/remote-workspace/file?workspace=w&path=a.bin" --data-binary @"$WORK/up.bin"
    [ "$status_code" = 201 ]
    # At the door: no bearer, a bad signature, a path that is no route.
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/status"
    assert_output 401
    api POST /execute-shell -H "x-science-execution-timestamp: $(date +%s%3N)" \
        -H "x-science-execution-signature: $(printf '0%.0s' $(seq 64))" --data-binary '{}'
    [ "$status_code" = 401 ]
    api GET /no-such-route
    [ "$status_code" = 404 ]
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/metrics"
    assert_output 401

    # Every run let go: nothing queued, running, in a sandbox or in flight.
    until_value sbx_runs_in_flight '{}' 0
    [ "$(value sbx_executions_queued)" = 0 ] && [ "$(value sbx_executions_running)" = 0 ]
    [ "$(value sbx_sandboxes_active)" = 0 ]
    # Prometheus' own linter, where it is installed.
    ! command -v promtool >/dev/null || promtool check metrics < "$WORK/metrics.txt"
    # The text format, as the parser saw it: typed families, counters _total.
    [ "$(jq -r '.families.sbx_executions' "$WORK/metrics.json")" = counter ]
    [ "$(jq -r '.families.sbx_execution_duration_seconds' "$WORK/metrics.json")" = histogram ]
    [ "$(jq -r '.families.process_resident_memory_bytes' "$WORK/metrics.json")" = gauge ]
    # Executions by mode, outcome and failure class: exactly the runs made.
    [ "$(value sbx_executions_total '{"mode":"sync","outcome":"completed","failure_class":"none"}')" = 3 ]
    [ "$(value sbx_executions_total '{"mode":"sync","outcome":"failed","failure_class":"none"}')" = 1 ]
    [ "$(value sbx_executions_total '{"mode":"sync","outcome":"failed","failure_class":"timeout"}')" = 1 ]
    [ "$(value sbx_executions_total '{"mode":"sync"}')" = 5 ]
    [ "$(value sbx_executions_total '{"mode":"managed","outcome":"completed","failure_class":"none"}')" = 1 ]
    [ "$(value sbx_executions_total '{"mode":"managed","outcome":"failed","failure_class":"none"}')" = 1 ]
    [ "$(value sbx_executions_total '{"mode":"managed","outcome":"cancelled","failure_class":"cancelled"}')" = 1 ]
    [ "$(value sbx_executions_total '{"mode":"managed","outcome":"cancelled","failure_class":"none"}')" = 1 ]
    [ "$(value sbx_executions_total '{"mode":"managed"}')" = 4 ]
    # Histograms: every ended execution waited in line; the 8 that left it ran.
    [ "$(value sbx_execution_queue_wait_seconds_count '{"mode":"sync"}')" = 5 ]
    [ "$(value sbx_execution_queue_wait_seconds_count '{"mode":"managed"}')" = 4 ]
    [ "$(value sbx_execution_duration_seconds_count '{"mode":"sync"}')" = 5 ]
    [ "$(value sbx_execution_duration_seconds_count '{"mode":"managed"}')" = 3 ]
    $PY - "$WORK/metrics.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for name in ("sbx_execution_duration_seconds", "sbx_execution_queue_wait_seconds"):
    for mode in ("sync", "managed"):
        rows = [s for s in doc["samples"] if s["labels"].get("mode") == mode]
        buckets = [(float(s["labels"]["le"]), s["value"]) for s in rows if s["name"] == name + "_bucket"]
        count = [s["value"] for s in rows if s["name"] == name + "_count"][0]
        total = [s["value"] for s in rows if s["name"] == name + "_sum"][0]
        assert buckets == sorted(buckets), (name, mode, "buckets out of order")
        assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), (name, mode, "not cumulative")
        assert buckets[-1] == (float("inf"), count), (name, mode, "+Inf is not _count")
        assert total >= 0, (name, mode)
# The timed-out run ran at least its 500 ms.
assert [s["value"] for s in doc["samples"] if s["name"] == "sbx_execution_duration_seconds_sum"
        and s["labels"]["mode"] == "sync"][0] >= 0.5
PY
    # sbx-run: one sweep at start, a sweep before each of the 8 runs
    # (retention), the 8 runs; none failed. The 8 came warm or cold.
    [ "$(value sbx_stage_calls_total '{"program":"sbx-run"}')" = 17 ]
    [ "$(value sbx_stage_errors_total '{"program":"sbx-run"}')" = 0 ]
    [ "$(value sbx_run_starts_total)" = 8 ]
    # sbx-ws: the upload, beside the collector's snapshot passes.
    [ "$(( $(value sbx_stage_calls_total '{"program":"sbx-ws"}') - $(value sbx_snapshot_collection_passes_total) ))" = 1 ]
    [ "$(value sbx_upload_received_bytes_total)" = 1000 ] && [ "$(value sbx_upload_stored_bytes_total)" = 1000 ]
    [ "$(value sbx_uploads_stored_total)" = 1 ]
    # The door: two requests without a bearer, one bad signature; the answers by status.
    [ "$(value sbx_http_refusals_total '{"reason":"unauthorized"}')" = 2 ]
    [ "$(value sbx_http_refusals_total '{"reason":"bad_signature"}')" = 1 ]
    [ "$(value sbx_http_refusals_total '{"reason":"max_connections"}')" = 0 ]
    [ "$(value sbx_http_responses_total '{"code":"401"}')" = 3 ]
    [ "$(value sbx_http_responses_total '{"code":"404"}')" = 1 ]
    [ "$(value sbx_http_responses_total '{"code":"400"}')" = 1 ]
    [ "$(value sbx_http_responses_total '{"code":"201"}')" = 1 ]
    [ "$(value sbx_http_requests_in_flight)" = 1 ] # this scrape
    [ "$(value sbx_http_connections_total)" -ge 20 ]
    # Denials: what the results sbx-run wrote list, by kind (none in older
    # results); the egress ones are the refused egress decisions.
    $PY - "$WORK/metrics.json" "$WORK"/data/runner-executions/runs/*/result.json <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
results = [json.load(open(p)) for p in sys.argv[2:]]
assert len(results) == 8, len(results)
want = {"seccomp": 0, "egress": 0, "limit": 0, "other": 0}
for r in results:
    for d in r.get("denials") or []:
        if isinstance(d, dict) and (d.get("count", 1) or 0) > 0:
            kind = d.get("kind") if d.get("kind") in want else "other"
            want[kind] += d.get("count", 1)
got = {s["labels"]["kind"]: s["value"] for s in doc["samples"] if s["name"] == "sbx_denials_total"}
assert got == want, (got, want)
refused = [s["value"] for s in doc["samples"] if s["name"] == "sbx_egress_decisions_total"
           and s["labels"]["verdict"] == "refused"]
assert refused == [want["egress"]], (refused, want)
PY
    # Bounded labels: only the documented names, and no value holds an id
    # (the API's or sbx-run's internal one).
    ids=$(printf '%s\n' ok1 ok2 ok3 fail1 slow1 mg1 mg2 mc1 mq1; ls "$WORK/data/runner-executions/runs")
    $PY - "$WORK/metrics.json" $ids <<'PY'
import json, sys
doc, ids = json.load(open(sys.argv[1])), sys.argv[2:]
allowed = {"mode", "outcome", "failure_class", "le", "start", "kind", "verdict", "reason", "code", "program", "version"}
for s in doc["samples"]:
    assert set(s["labels"]) <= allowed, s
    for v in s["labels"].values():
        assert not any(i in v for i in ids), s
assert len(doc["samples"]) < 400, len(doc["samples"])
PY
    # The process, cheaply: memory, fds, start time.
    [ "$(value process_resident_memory_bytes | cut -d. -f1)" -gt 0 ]
    [ "$(value process_open_fds | cut -d. -f1)" -gt 0 ]
    [ "$(value process_start_time_seconds | cut -d. -f1)" -le "$(date +%s)" ]
}

@test "GET /metrics: the bearer is asked, the content type is the text format 0.0.4, the store and the data dir are sized" {
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer wrong" "$BASE/metrics"
    assert_output 401
    run curl -sS -D - -o /dev/null -H "authorization: Bearer $TOKEN" "$BASE/metrics"
    assert_line --partial "HTTP/1.1 200"
    assert_line "content-type: text/plain; version=0.0.4; charset=utf-8"$'\r'
    scrape
    [ "$(value sbx_store_db_bytes | cut -d. -f1)" -gt 0 ]
    [ "$(value sbx_data_filesystem_size_bytes | cut -d. -f1)" -gt 0 ]
    [ "$(value sbx_build_info "{\"version\":\"$(curl -sS "$BASE/health" | jq -r .runnerVersion)\"}")" = 1 ]
    [ "$(value sbx_warm_runners_target)" = 2 ]
    # Every family the man page lists is served, and every family served is in it.
    man="$BATS_TEST_DIRNAME/../../man/sbx-httpd.8.scd"
    [ -f "$man" ] || skip "no man page next to this suite"
    served=$(jq -r '.samples[].name' "$WORK/metrics.json" | sed -E 's/_(bucket|sum|count)$//' | sort -u)
    listed=$(sed -n '/^# METRICS/,/^# [A-Z]/p' "$man" | grep -E '^\*(sbx|process)_.*\((counter|gauge|histogram)' |
        grep -oE '\*(sbx|process)_[a-z_]+\*' | tr -d '*' | sort -u)
    [ -n "$listed" ]
    diff <(echo "$served") <(echo "$listed")
}

@test "SBX_METRICS_LISTEN serves /metrics alone on its own listener, with the bearer unless SBX_METRICS_AUTH=none" {
    httpd_stop
    httpd_start SBX_METRICS_LISTEN=127.0.0.1:0
    MBASE="http://127.0.0.1:$(jq -r .metrics.port <<< "$READY")"
    [ "$MBASE" != "http://127.0.0.1:null" ] && [ "$MBASE" != "$BASE" ]
    run curl -sS -o /dev/null -w '%{http_code}' "$MBASE/metrics"
    assert_output 401
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer $TOKEN" "$MBASE/health"
    assert_output 404
    run curl -sS -o /dev/null -w '%{http_code}' -X POST -H "authorization: Bearer $TOKEN" "$MBASE/metrics"
    assert_output 405
    scrape "$MBASE"
    # Its own requests are not the API's: none in flight there.
    [ "$(value sbx_http_requests_in_flight)" = 0 ]
    [ "$(value sbx_http_refusals_total '{"reason":"unauthorized"}')" = 1 ]
    # A token of its own: the scraper's, not the runner's, and only there.
    httpd_stop
    httpd_start SBX_METRICS_LISTEN=127.0.0.1:0 SBX_METRICS_TOKEN=scrape-$$
    MBASE="http://127.0.0.1:$(jq -r .metrics.port <<< "$READY")"
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer $TOKEN" "$MBASE/metrics"
    assert_output 401
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer scrape-$$" "$MBASE/metrics"
    assert_output 200
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer scrape-$$" "$BASE/metrics"
    assert_output 401
    [ -z "$(tr '\0' '\n' < "/proc/$HTTPD_PID/environ" | grep "scrape-$$" || true)" ] # erased, as the runner token
    httpd_stop
    httpd_start SBX_METRICS_LISTEN=127.0.0.1:0 SBX_METRICS_AUTH=none
    run curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(jq -r .metrics.port <<< "$READY")/metrics"
    assert_output 200
    # The API's own /metrics still asks the bearer.
    run curl -sS -o /dev/null -w '%{http_code}' "$BASE/metrics"
    assert_output 401
    httpd_stop
    # A bad value stops the start, naming the variable.
    for bad in SBX_METRICS_LISTEN=9311 SBX_METRICS_LISTEN=:9311 SBX_METRICS_LISTEN=h:99999 SBX_METRICS_AUTH=basic \
        SBX_METRICS_TOKEN=t "SBX_METRICS_TOKEN=t SBX_METRICS_LISTEN=127.0.0.1:0 SBX_METRICS_AUTH=none"; do
        run env $bad sbx-httpd
        assert_failure 2
        assert_output --partial "${bad%%=*}"
    done
}

@test "a connection past SCIENCE_AGENT_MAX_CONNECTIONS is counted as refused at the door" {
    httpd_stop
    httpd_start SBX_METRICS_LISTEN=127.0.0.1:0 SCIENCE_AGENT_MAX_CONNECTIONS=16
    MBASE="http://127.0.0.1:$(jq -r .metrics.port <<< "$READY")"
    # 16 idle connections held until the FIFO is closed (bounded).
    mkfifo "$WORK/release"
    timeout 60 $PY -c '
import socket, sys
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(16)]
sys.stdin.read()' "$PORT" < "$WORK/release" &
    exec 5>"$WORK/release"
    until_value sbx_http_connections_open '{}' 16 "$MBASE"
    run curl -sS -o /dev/null -w '%{http_code}' -H "authorization: Bearer $TOKEN" "$BASE/status"
    assert_output 503
    scrape "$MBASE"
    [ "$(value sbx_http_refusals_total '{"reason":"max_connections"}')" = 1 ]
    [ "$(value sbx_http_responses_total '{"code":"503"}')" = 1 ]
    exec 5>&-
    until_value sbx_http_connections_open '{}' 0 "$MBASE"
}

@test "contrib: the Prometheus scrape config reaches the metrics listener with its token; the Grafana dashboard asks only for served metrics" {
    CONTRIB="$BATS_TEST_DIRNAME/../../contrib"
    httpd_stop
    httpd_start SBX_METRICS_LISTEN=127.0.0.1:0 SBX_METRICS_TOKEN=scrape-$$
    # The scrape as the config says it: scheme, target, path, Bearer from
    # credentials_file (here a file of this test's token).
    printf 'scrape-%s\n' "$$" > "$WORK/token"
    $PY - "$CONTRIB/prometheus/prometheus.yml" "$WORK/token" "$(jq -r .metrics.port <<< "$READY")" > "$WORK/prom.yml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
job = doc["scrape_configs"][0]
assert job["job_name"] == "sbx-httpd" and job["metrics_path"] == "/metrics", job
assert job["authorization"]["type"] == "Bearer" and "credentials_file" in job["authorization"], job
assert job["static_configs"][0]["targets"] == ["127.0.0.1:9311"], job
job["authorization"]["credentials_file"] = sys.argv[2]
job["static_configs"][0]["targets"] = ["127.0.0.1:" + sys.argv[3]]
print(yaml.safe_dump(doc))
PY
    ! command -v promtool >/dev/null || promtool check config "$WORK/prom.yml"
    url=$($PY -c 'import sys, yaml; j = yaml.safe_load(open(sys.argv[1]))["scrape_configs"][0]
print("%s://%s%s" % (j["scheme"], j["static_configs"][0]["targets"][0], j["metrics_path"]))' "$WORK/prom.yml")
    token=$($PY -c 'import sys, yaml; print(open(yaml.safe_load(open(sys.argv[1]))["scrape_configs"][0]["authorization"]["credentials_file"]).read().strip())' "$WORK/prom.yml")
    curl -sS -f -o "$WORK/metrics.txt" -H "authorization: Bearer $token" "$url"
    TOKEN=$token scrape "${url%/metrics}"
    [ "$(value sbx_build_info)" = 1 ]
    # Prometheus' own linter, where it is installed.
    ! command -v promtool >/dev/null || promtool check metrics < "$WORK/metrics.txt"
    # The dashboard: valid JSON, unique panel ids, a query per panel, and
    # every metric a query names is one sbx-httpd serves.
    $PY - "$CONTRIB/grafana/sbx-dashboard.json" "$WORK/metrics.json" <<'PY'
import json, re, sys
dash, doc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
served = {s["name"] for s in doc["samples"]}
panels = dash["panels"]
ids = [p["id"] for p in panels]
assert len(ids) == len(set(ids)), ids
assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
named = set()
for p in panels:
    if p["type"] == "row":
        continue
    assert p["targets"], p["title"]
    for t in p["targets"]:
        names = set(re.findall(r"\b((?:sbx|process)_[a-z_]+)\b", t["expr"]))
        assert names, (p["title"], t["expr"])
        named |= names
missing = sorted(n for n in named if n not in served)
assert not missing, missing
# And every family served is on the dashboard.
families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in served}
shown = {re.sub(r"_(bucket|sum|count)$", "", n) for n in named}
assert families <= shown, sorted(families - shown)
PY
}
