#!/usr/bin/env python3
"""exec-loop.py BASE TOKEN PROJECTS N MODE: N sequential signed /execute-shell
runs of `true` over one keep-alive connection, each in a fresh workspace
under PROJECTS (MODE fresh) or all in PROJECTS/reused (MODE reused), or N
GET /health (MODE health). Prints one JSON line: the client's own CPU
seconds (so a caller measuring machine-wide CPU can take it out), the wall
time and the failures."""
import hashlib, hmac, http.client, json, os, resource, sys, time, urllib.parse

base, token, projects, n, mode = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
url = urllib.parse.urlparse(base)
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
tag = "%d-%d" % (os.getpid(), int(time.time() * 1000))
failed = 0
start = time.time()
for i in range(n):
    if mode == "health":
        conn.request("GET", "/health")
        r = conn.getresponse()
        failed += r.status != 200
        r.read()
        continue
    ws = os.path.join(projects, "loop-%s-%d" % (tag, i) if mode == "fresh" else "reused")
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    body = json.dumps({"agentId": "main", "code": "true", "executionId": "loop-%s-%d" % (tag, i), "workspaceRoot": ws,
                       "permissionEpoch": {"sessionId": "bench", "networkPolicy": "none",
                                           "mounts": [{"source": "workspace", "mode": "read-write"}]}}).encode()
    ts = str(int(time.time() * 1000))
    sig = hmac.new(token.encode(), (ts + "\n" + hashlib.sha256(body).hexdigest()).encode(), hashlib.sha256).hexdigest()
    conn.request("POST", "/execute-shell", body, {"authorization": "Bearer " + token, "content-type": "application/json",
                                                   "x-science-execution-timestamp": ts, "x-science-execution-signature": sig})
    r = conn.getresponse()
    data = r.read()
    failed += r.status != 200 or json.loads(data).get("exitCode") != 0
u = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"runs": n, "failed": failed, "clientCpuSeconds": u.ru_utime + u.ru_stime,
                  "wallSeconds": time.time() - start}))
