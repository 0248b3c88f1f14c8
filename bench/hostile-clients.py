#!/usr/bin/env python3
"""hostile-clients.py BASE TOKEN WORKSPACE IDLE SLOW ROUNDS: measures
GET /health and a signed POST /execute-shell of `true` ROUNDS times each,
first with nothing else open (the anchor), then while IDLE connections sit
silent and SLOW connections trickle a body a byte at a time, all from
loopback. Prints one JSON line: medians, failures, connections held."""
import hashlib, hmac, json, resource, socket, sys, threading, time, urllib.parse

base, token, workspace = sys.argv[1], sys.argv[2], sys.argv[3]
n_idle, n_slow, rounds = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
url = urllib.parse.urlparse(base)
host, port = url.hostname, url.port
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def request(method, path, body=b"", headers=()):
    """One request on a fresh connection; (status, seconds)."""
    t0 = time.monotonic()
    s = socket.create_connection((host, port), timeout=30)
    head = "%s %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\nContent-Length: %d\r\n" % (
        method, path, host, port, len(body))
    for k, v in headers:
        head += "%s: %s\r\n" % (k, v)
    s.sendall(head.encode() + b"\r\n" + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.") else 0
    return status, time.monotonic() - t0, data


def signed_true(i, tag):
    body = json.dumps({"agentId": "main", "code": "true", "executionId": "hostile-%s-%d" % (tag, i),
                       "workspaceRoot": workspace,
                       "permissionEpoch": {"sessionId": "hostile", "networkPolicy": "none",
                                           "mounts": [{"source": "workspace", "mode": "read-write"}]}}).encode()
    ts = str(int(time.time() * 1000))
    sig = hmac.new(token.encode(), (ts + "\n" + hashlib.sha256(body).hexdigest()).encode(), hashlib.sha256).hexdigest()
    status, took, data = request("POST", "/execute-shell", body, [
        ("authorization", "Bearer " + token), ("content-type", "application/json"),
        ("x-science-execution-timestamp", ts), ("x-science-execution-signature", sig)])
    ok = status == 200 and b'"exitCode":0' in data
    return ok, took


def measure(tag):
    health, execs, failures = [], [], []
    for i in range(rounds):
        status, took, _ = request("GET", "/health")
        (health if status == 200 else failures).append(took if status == 200 else ("health", status))
        ok, took = signed_true(i, tag)
        (execs if ok else failures).append(took if ok else ("execute", i))
    med = lambda v: round(sorted(v)[len(v) // 2] * 1000, 2) if v else None
    return {"healthMs": med(health), "executeMs": med(execs), "failures": failures[:5],
            "failed": len(failures)}


quiet = measure("quiet")

# The hostile side: silent connections, then slow bodies sent by one thread.
idle = []
for _ in range(n_idle):
    s = socket.create_connection((host, port), timeout=30)
    idle.append(s)
slow = []
for _ in range(n_slow):
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(("POST /execute-shell HTTP/1.1\r\nHost: x\r\nauthorization: Bearer %s\r\n"
               "Content-Length: 1000000\r\n\r\n" % token).encode())
    slow.append(s)
stop = threading.Event()


def trickle():
    while not stop.wait(0.5):
        for s in slow:
            try:
                s.send(b"x")
            except OSError:
                pass


t = threading.Thread(target=trickle)
t.start()
loaded = measure("loaded")
# How many of the hostile connections the daemon still holds open.
alive = 0
for s in idle + slow:
    try:
        s.setblocking(False)
        alive += 0 if s.recv(1) == b"" else 1
    except BlockingIOError:
        alive += 1
    except OSError:
        pass
stop.set()
t.join()
for s in idle + slow:
    s.close()
print(json.dumps({"quiet": quiet, "loaded": loaded, "idle": n_idle, "slow": n_slow, "stillOpen": alive}))
