#!/bin/bash
# Collection off the request path: RECORDS finished records of CHUNKS
# 4 KiB log chunks each are written into a stopped daemon's store, and
# SNAPSHOTS remote snapshot manifests of 20 objects each over 100 keys into
# its snapshot store; restarted with a 1 s retention and 10 snapshots kept
# per key, it collects them while GET /shell-executions/<id> (a store read)
# keeps being asked. The anchor is the same read, in the same run, once
# nothing is left to collect; prints both latencies, their ratio, the
# collection's throughput, the snapshot pass and failures (must be 0).
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-400} CHUNKS=${CHUNKS:-64} SNAPSHOTS=${SNAPSHOTS:-2000}
. bench/httpd-work.sh retention
export SCIENTIFIC_ENVS=0 SCIENCE_AGENT_EXECUTION_RETENTION_SECONDS=1 SCIENCE_AGENT_REMOTE_SNAPSHOT_KEEP=10 \
    SCIENCE_AGENT_REMOTE_SNAPSHOT_GRACE_SECONDS=0
. bench/httpd-start.sh
kill "$pid" && wait "$pid" || true
python3 - "$work/data/runner-executions/executions.sqlite" "$RECORDS" "$CHUNKS" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
records, chunks, text = int(sys.argv[2]), int(sys.argv[3]), "x" * 4096
for i in range(records):
    db.execute("INSERT INTO executions (id, session_id, agent_id, workspace, state, queued_at, started_at, finished_at,"
               " next_cursor, log_bytes, result_bytes) VALUES (?, 's', 'a', '/w', 'completed', '2020-01-01T00:00:00.000Z',"
               " '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:01.000Z', ?, ?, 0)", ("r%d" % i, chunks + 1, chunks * 4096))
    db.executemany("INSERT INTO log_chunks VALUES (?, ?, 'stdout', ?)", [("r%d" % i, c + 1, text) for c in range(chunks)])
db.commit()
PY
python3 - "$work/data/remote-snapshots" "$SNAPSHOTS" <<'PY'
# The remote snapshot store is an sbx-snap store (sbx-ws(1) SNAPSHOTS):
# per key a ref and its reflog, per snapshot a manifest and an index record.
import hashlib, json, os, sys, uuid
store, n = sys.argv[1], int(sys.argv[2])
for d in ("objects", "refs", "statcache", "tmp", "pins", "index"):
    os.makedirs("%s/%s" % (store, d), exist_ok=True)

def put(data):
    sha = hashlib.sha256(data).hexdigest()
    os.makedirs("%s/objects/%s" % (store, sha[:2]), exist_ok=True)
    open("%s/objects/%s/%s" % (store, sha[:2], sha[2:]), "wb").write(data)
    return "sha256:" + sha

for i in range(n):
    entries = []
    for f in range(20):
        data = ("%d/%d" % (i, f)).encode() * 8
        entries.append({"path": "f%d" % f, "type": "file", "exec": False, "size": len(data), "digest": put(data)})
    entries.sort(key=lambda e: e["path"])
    digest = put(json.dumps({"mediaType": "application/vnd.sbx.tree.v1+json", "entries": entries},
                            separators=(",", ":")).encode())
    key = "k%d" % (i % 100)
    at = "2020-01-01T00:00:%02d.%03dZ" % (i // 1000, i % 1000)
    ref = "%s/refs/remote-%s" % (store, hashlib.sha256(key.encode()).hexdigest())
    open(ref, "w").write(digest + "\n")
    open(ref + ".log", "a").write(json.dumps({"at": at[:19] + "Z", "digest": digest}, separators=(",", ":")) + "\n")
    sid = str(uuid.uuid4())
    open("%s/index/%s.json" % (store, sid), "w").write(json.dumps({"id": sid, "workspace": key, "capturedAt": at, "digest": digest}))
# Written an hour ago: past any clock slack.
for root, _, names in os.walk(store + "/objects"):
    for name in names:
        os.utime(os.path.join(root, name), (1, 1))
PY
rm -f "$work/ready"
. bench/httpd-start.sh
out=$(timeout 300 python3 - "$base" "$RECORDS" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
records = int(sys.argv[2])
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
auth = {"authorization": "Bearer bench-token"}

def get(path):
    conn.request("GET", path, headers=auth)
    r = conn.getresponse()
    return r.status, r.read()

def collected():
    return json.loads(get("/health")[1])["retention"]["collected"]["executions"]

def reads(until):
    times, failed = [], 0
    while not until(len(times)):
        t = time.perf_counter()
        status, _ = get("/shell-executions/absent?sessionId=s&agentId=a")
        times.append((time.perf_counter() - t) * 1000)
        failed += status != 400
    times.sort()
    return times, failed

start = time.perf_counter()
busy, busy_failed = reads(lambda n: n % 20 == 0 and n and collected() >= records)
took = time.perf_counter() - start
quiet, quiet_failed = reads(lambda n: n >= len(busy))
pct = lambda t, p: round(t[min(len(t) - 1, int(len(t) * p))], 2)
deadline = time.time() + 60
while True:
    health = json.loads(get("/health")[1])["retention"]["collected"]
    if health["snapshots"] or time.time() > deadline:
        break
    time.sleep(0.1)
print(json.dumps({"snapshots": health["snapshots"], "objects": health["snapshotObjects"], "passMs": health["snapshotPassMs"],
                  "seconds": round(took, 2), "reads": len(busy), "busyP50": pct(busy, .5), "busyP99": pct(busy, .99),
                  "busyMax": round(busy[-1], 2), "quietP50": pct(quiet, .5), "quietP99": pct(quiet, .99),
                  "failed": busy_failed + quiet_failed}))
PY
)
mib=$((RECORDS * CHUNKS * 4 / 1024))
jq -r --arg mib "$mib" --arg n "$RECORDS" --arg s "$SNAPSHOTS" '
    "collected:                          \($n) records, \($mib) MiB of logs in \(.seconds) s",
    "collection throughput:              \(($mib | tonumber) / .seconds | . * 10 | round / 10) MiB/s",
    "anchor: store read, nothing to do:  \(.quietP50) ms p50, \(.quietP99) ms p99",
    "store read while collecting:        \(.busyP50) ms p50, \(.busyP99) ms p99, \(.busyMax) ms max (\(.reads) reads)",
    "read p99 ratio (collecting / quiet): \(.busyP99 / .quietP99 * 100 | round / 100)",
    "snapshot pass over \($s) manifests:   \(.passMs) ms (\(.snapshots) manifests, \(.objects) objects removed)",
    "failed requests:                    \(.failed)"' <<< "$out"
[ "$(jq .failed <<< "$out")" = 0 ]
