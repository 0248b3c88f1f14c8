#!/usr/bin/env python3
"""tls-client.py MODE HOST PORT N CAFILE: HTTPS through the sandbox's
egress bridge (127.0.0.1:18118, CONNECT), verified with CAFILE.
handshake: N fresh connections, each one GET /small -> "p50 p99" ms;
steady: one kept connection, N GETs of /small -> "p50 p99" ms;
download: GET /bytes/N on one connection -> seconds."""
import http.client
import ssl
import sys
import time

mode, host, port, n, cafile = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
context = ssl.create_default_context(cafile=cafile)


def connect():
    c = http.client.HTTPSConnection("127.0.0.1", 18118, context=context, timeout=60)
    c.set_tunnel(host, port)
    return c


def get(c, path):
    c.request("GET", path, headers={"Host": "%s:%d" % (host, port)})
    r = c.getresponse()
    if r.status != 200:
        raise SystemExit("status %d" % r.status)
    return r


def quantiles(ms):
    ms.sort()
    return "%.3f %.3f" % (ms[len(ms) // 2], ms[min(len(ms) - 1, int(len(ms) * 0.99))])


if mode == "handshake":
    ms = []
    for _ in range(n):
        t = time.perf_counter()
        c = connect()
        get(c, "/small").read()
        c.close()
        ms.append((time.perf_counter() - t) * 1000)
    print(quantiles(ms))
elif mode == "steady":
    c = connect()
    get(c, "/small").read()
    ms = []
    for _ in range(n):
        t = time.perf_counter()
        get(c, "/small").read()
        ms.append((time.perf_counter() - t) * 1000)
    print(quantiles(ms))
else:
    c = connect()
    t = time.perf_counter()
    r = get(c, "/bytes/%d" % n)
    got = 0
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        got += len(chunk)
    if got != n:
        raise SystemExit("short: %d of %d" % (got, n))
    print("%.3f" % (time.perf_counter() - t))
