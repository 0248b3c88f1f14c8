# httpd_helpers.bash — a real sbx-httpd per test: its own data dir, an
# ephemeral port (read from --ready-fd, no sleeps), and curl helpers that
# sign like the real client (bearer + HMAC-SHA256 over ts "\n" sha256(body)).
load launch_helpers

TOKEN=test-token-$$

httpd_setup() {
    launch_setup
    export SCIENCE_AGENT_DATA_DIR="$WORK/data" SCIENCE_AGENT_RUNNER_TOKEN="$TOKEN" SCIENCE_AGENT_RUNNER_PORT=0
    unset SBX_DATA_DIR SCIENCE_AGENT_RUNNER_SOCKET
    # Environments off unless a suite turns them on with the fake
    # micromamba: their setup would otherwise download from the internet.
    export SCIENTIFIC_ENVS="${SCIENTIFIC_ENVS:-0}"
    PROJECT="$WORK/data/projects/p1"
    httpd_start
    mkdir -p "$PROJECT"
    chmod 777 "$PROJECT"
}

# httpd_start [ENV=VALUE...]: starts the server and waits for its address.
httpd_start() {
    rm -f "$WORK/ready" && mkfifo "$WORK/ready"
    env "$@" sbx-httpd --ready-fd 3 3>"$WORK/ready" 2>>"$WORK/httpd.err" &
    HTTPD_PID=$!
    read -r READY < "$WORK/ready"
    PORT=$(jq -r '.port // empty' <<< "$READY")
    BASE="http://127.0.0.1:$PORT"
}

# httpd_stop: stops the server and waits for it; the data dir stays.
httpd_stop() {
    kill "$HTTPD_PID" 2>/dev/null || true
    wait "$HTTPD_PID" 2>/dev/null || true
}

httpd_teardown() {
    [ -z "${HTTPD_PID:-}" ] || kill "$HTTPD_PID" 2>/dev/null || true
    end_jobs
    wait 2>/dev/null || true
    launch_teardown
}

# api METHOD PATH [CURL-ARGS...]: an authenticated call; sets $status_code
# and $output (the body).
api() {
    local method=$1 path=$2
    shift 2
    run curl -sS -o "$WORK/body" -w '%{http_code}' -X "$method" -H "authorization: Bearer $TOKEN" "$@" "$BASE$path"
    status_code=$output
    output=$(cat "$WORK/body")
}

# sign BODY-FILE [TS]: prints the signature headers' values "TS SIG".
sign() {
    local ts=${2:-$(date +%s%3N)} hash
    hash=$(sha256sum < "$1" | cut -d' ' -f1)
    printf '%s %s\n' "$ts" "$(printf '%s\n%s' "$ts" "$hash" | openssl dgst -sha256 -hmac "$TOKEN" -r | cut -d' ' -f1)"
}

# signed PATH JSON [CURL-ARGS...]: a signed POST of JSON.
signed() {
    local path=$1
    printf '%s' "$2" > "$WORK/req.json"
    shift 2
    read -r ts sig < <(sign "$WORK/req.json")
    api POST "$path" -H "x-science-execution-timestamp: $ts" -H "x-science-execution-signature: $sig" \
        --data-binary @"$WORK/req.json" "$@"
}

# shell_request ID CODE [EXTRA-JSON]: a ShellExecutionRequest in $PROJECT.
shell_request() {
    jq -cn --arg id "$1" --arg code "$2" --arg ws "$PROJECT" --argjson extra "${3:-{\}}" \
        '{agentId: "main", code: $code, executionId: $id, workspaceRoot: $ws,
          permissionEpoch: {id: "ep1", sessionId: "s1", mounts: [{source: "workspace", mode: "read-write"}],
                            networkPolicy: "none", environmentRevisionId: "rev-1"}} + $extra'
}

# skill_bundle FILE...: a bundle of one skill "demo" (revision 2, version
# 0.1) with FILE=CONTENT pairs; the package id computed here, in Python,
# independently of the server, is printed on fd 3 via $WORK/expected-id.
skill_bundle() {
    python3 - "$@" <<'PY' 3>"$WORK/expected-id"
import base64, hashlib, json, os, sys
files = [a.split("=", 1) for a in sys.argv[1:]]
files = [(p, c.encode()) for p, c in files]
h = hashlib.sha256()
for p, c in sorted(files):
    h.update(("%d:%s:%d:" % (len(p.encode()), p, len(c))).encode() + c)
skill = {"id": "demo", "revision": 2, "version": "0.1", "hash": h.hexdigest(),
         "files": [{"path": p, "content": base64.b64encode(c).decode(), "size": len(c),
                    "hash": hashlib.sha256(c).hexdigest()} for p, c in files]}
manifest = json.dumps([{"hash": skill["hash"], "id": "demo", "revision": 2, "version": "0.1"}], separators=(",", ":"))
os.write(3, hashlib.sha256(manifest.encode()).hexdigest().encode())
print(json.dumps({"skills": [skill]}))
PY
}

# wait_state ID STATE...: polls the managed record (as the real client
# does, every ~100 ms, bounded: the API offers nothing to block on) until
# its state is one of STATE. The owner is $owner (default s1/main).
wait_state() {
    local id=$1
    shift
    for _ in $(seq 300); do
        api GET "/shell-executions/$id?${owner:-sessionId=s1&agentId=main}"
        for s in "$@"; do [ "$(jq -r .state <<< "$output")" = "$s" ] && return 0; done
        sleep 0.1
    done
    echo "gave up waiting for $id: $output" >&2
    return 1
}

# rss_growth_with_bodies N HEAD-LINE: how many KiB the daemon's RSS grew
# while N connections each sent HEAD-LINE (a request line, no CRLF) with
# Content-Length 2000000 and 1.9 MB of it, all still open.
rss_growth_with_bodies() {
    local before
    before=$(awk '/^VmRSS/ { print $2 }' "/proc/$HTTPD_PID/status")
    python3 - "$PORT" "$HTTPD_PID" "$1" "$2" "$before" <<'PY'
import socket, sys
port, pid, n, head, before = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head.encode() + b"\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n" + b"x" * 1900000)
    conns.append(s)
# Every body has reached the daemon (sendall returned): what does it hold now?
rss = int([l for l in open("/proc/%s/status" % pid) if l.startswith("VmRSS")][0].split()[1])
print(rss - before)
for s in conns:
    s.close()
PY
}
