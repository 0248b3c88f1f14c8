#!/usr/bin/env python3
"""http-load.py BASE TOKEN PROJECTS N WORKSPACES CLIENTS: N managed shell
executions spread over WORKSPACES workspaces (created under PROJECTS),
submitted by CLIENTS concurrent signed clients, each polled to its end.
Checks none is lost and each workspace ran its executions one at a time,
none overtaking one queued before it; prints one JSON line of figures."""
import hashlib, hmac, json, os, sys, threading, time, urllib.request

base, token, projects = sys.argv[1], sys.argv[2], sys.argv[3]
n, n_ws, n_clients = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
workspaces = [os.path.join(projects, "load-%02d" % i) for i in range(n_ws)]
for w in workspaces:
    os.makedirs(w, exist_ok=True)
    os.chmod(w, 0o777)


def call(method, path, body=None, signed=False):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("authorization", "Bearer " + token)
    if signed:
        ts = str(int(time.time() * 1000))
        digest = hashlib.sha256(data).hexdigest()
        req.add_header("x-science-execution-timestamp", ts)
        req.add_header("x-science-execution-signature",
                       hmac.new(token.encode(), (ts + "\n" + digest).encode(), hashlib.sha256).hexdigest())
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


jobs = [("load-%d-%d" % (os.getpid(), i), workspaces[i % n_ws]) for i in range(n)]
lock = threading.Lock()
latencies, failures, records = [], [], {}


def client(k):
    for i in range(k, n, n_clients):
        eid, ws = jobs[i]
        body = {"agentId": "main", "code": "echo %s >> order.log" % eid, "executionId": eid, "workspaceRoot": ws,
                "permissionEpoch": {"sessionId": "load", "mounts": [{"source": "workspace", "mode": "read-write"}],
                                    "networkPolicy": "none"}}
        t0 = time.time()
        status, rec = call("POST", "/shell-executions", body, signed=True)
        if status != 202:
            with lock:
                failures.append((eid, status, rec))
            continue
        while rec.get("state") not in ("completed", "failed", "cancelled", "unknown"):
            time.sleep(0.05)
            status, rec = call("GET", "/shell-executions/%s?sessionId=load&agentId=main" % eid)
        with lock:
            latencies.append(time.time() - t0)
            records[eid] = rec
            if rec["state"] != "completed":
                failures.append((eid, rec["state"], rec.get("error")))


start = time.time()
threads = [threading.Thread(target=client, args=(k,)) for k in range(n_clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
wall = time.time() - start

order_ok, violations = True, []
for ws in workspaces:
    mine = {r["id"]: r for r in records.values() if any(j[0] == r["id"] and j[1] == ws for j in jobs)}
    with open(os.path.join(ws, "order.log")) as f:
        ran = f.read().split()
    # Every execution ran exactly once.
    if sorted(ran) != sorted(mine):
        order_ok = False
        violations.append((ws, "ran", len(ran), len(mine)))
        continue
    # In the order they ran (order.log is the truth; timestamps only have
    # milliseconds): each started once the previous one had finished, and
    # none overtook one queued before it.
    for a, b in zip(ran, ran[1:]):
        ra, rb = mine[a], mine[b]
        if rb["startedAt"] < ra["finishedAt"]:
            order_ok = False
            violations.append((a, b, "overlap", ra["finishedAt"], rb["startedAt"]))
        if rb["queuedAt"] < ra["queuedAt"]:
            order_ok = False
            violations.append((a, b, "overtook", ra["queuedAt"], rb["queuedAt"]))

latencies.sort()
print(json.dumps({"executions": n, "completed": len(records) - len([f for f in failures if f[0] in records]),
                  "lost": n - len(records), "failures": failures[:5], "orderHeld": order_ok,
                  "orderViolations": violations[:5],
                  "wallSeconds": round(wall, 2), "perSecond": round(n / wall, 1),
                  "p50Ms": round(latencies[len(latencies) // 2] * 1000, 1) if latencies else None,
                  "p99Ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1) if latencies else None}))
