#!/usr/bin/env python3
"""http-concurrency.py BASE TOKEN PROJECTS CLIENTS RUNS [fresh]: CLIENTS
concurrent signed clients, each on a workspace of its own (created under
PROJECTS), each sending RUNS synchronous /execute-shell requests one after
another over one keep-alive connection; each run appends its number to the
workspace's order.log. With "fresh", every run gets a new workspace (as an
agent platform makes one per task). Checks every run answered 200 with exit
code 0 and each log holds exactly its runs in order; prints one JSON line."""
import hashlib, hmac, http.client, json, os, sys, threading, time, urllib.parse

base, token, projects = sys.argv[1], sys.argv[2], sys.argv[3]
n_clients, runs = int(sys.argv[4]), int(sys.argv[5])
fresh = len(sys.argv) > 6 and sys.argv[6] == "fresh"


def workspace(k, i):
    ws = os.path.join(projects, "conc-%02d" % k + ("-%04d" % i if fresh else ""))
    os.makedirs(ws, exist_ok=True)
    os.chmod(ws, 0o777)
    return ws
url = urllib.parse.urlparse(base)
failures, lock = [], threading.Lock()


def client(k):
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    for i in range(runs):
        ws = workspace(k, i)
        body = json.dumps({"agentId": "c%d" % k, "code": "echo %d >> order.log" % i, "executionId": "c%d-%d" % (k, i),
                           "workspaceRoot": ws, "permissionEpoch": {"sessionId": "conc", "networkPolicy": "none",
                           "mounts": [{"source": "workspace", "mode": "read-write"}]}}).encode()
        ts = str(int(time.time() * 1000))
        sig = hmac.new(token.encode(), (ts + "\n" + hashlib.sha256(body).hexdigest()).encode(), hashlib.sha256).hexdigest()
        conn.request("POST", "/execute-shell", body, {"authorization": "Bearer " + token, "content-type": "application/json",
                                                       "x-science-execution-timestamp": ts,
                                                       "x-science-execution-signature": sig})
        r = conn.getresponse()
        data = r.read()
        if r.status != 200 or json.loads(data).get("exitCode") != 0:
            with lock:
                failures.append((k, i, r.status, data[:200].decode(errors="replace")))
    conn.close()


start = time.time()
threads = [threading.Thread(target=client, args=(k,)) for k in range(n_clients)]
for t in threads:
    t.start()
for t in threads:
    t.join()
wall = time.time() - start
order_ok = True
for k in range(n_clients):
    if fresh:
        for i in range(runs):
            with open(os.path.join(workspace(k, i), "order.log")) as f:
                if f.read().split() != [str(i)]:
                    order_ok = False
        continue
    with open(os.path.join(projects, "conc-%02d" % k, "order.log")) as f:
        if f.read().split() != [str(i) for i in range(runs)]:
            order_ok = False
print(json.dumps({"clients": n_clients, "runs": n_clients * runs, "failed": len(failures), "failures": failures[:3],
                  "orderHeld": order_ok, "wallSeconds": round(wall, 2), "perSecond": round(n_clients * runs / wall, 1)}))
