#!/usr/bin/env bats
# The supervisor/worker contract: a cooperative worker's reports end in a
# stream `sbx-run verify` accepts, with outputs and media hashed; hostile
# workers end as sandbox-violation or resource-exhausted with the
# supervisor alive and the caps honoured; the signing key stays outside.

load launch_helpers

setup() {
    launch_setup
    STATE="$WORK/state"
    KEY="$WORK/key"
    printf 'KEYMARKER-%s' "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$KEY"
    chmod 600 "$KEY"
}

teardown() {
    launch_teardown
}

request() {
    jq -cn --arg id "$1" --arg code "$2" --arg ws "$WS" --argjson extra "${3:-{\}}" \
        '{executionId: $id, language: "shell", code: $code, workspace: $ws} + $extra'
}

# worker_run ID CODE [EXTRA-JSON] [SBX-RUN-OPTION...]: events in $WORK/ID.jsonl
worker_run() {
    local id=$1 code=$2 extra=${3:-"{}"}
    shift 3 2>/dev/null || shift $#
    run --separate-stderr sbx-run --state-dir "$STATE" --signing-key-file "$KEY" "$@" - <<<"$(request "$id" "$code" "$extra")"
    printf '%s\n' "$output" > "$WORK/$id.jsonl"
    result=$(jq -c 'select(.event == "finished") | .result' "$WORK/$id.jsonl")
}
r() { jq -r "$1" <<<"$result"; }

@test "a cooperative worker: progress, metrics, params, tags, log, checkpoint, media, outputs, result" {
    code='R=sbx-report
$R state running
for i in 1 2 3; do $R progress "0.$i"; done
$R metric loss 0.25 --step 1 --unit nats
$R params lr=0.01 epochs=3 fast=true
$R tags model=tiny
$R log info "training done"
printf ckpt > /scratch/checkpoints/step1
$R checkpoint step1 --step 1
printf PNGDATA > /scratch/media/plot.png
$R media plot.png --kind image --caption "the loss"
mkdir -p /scratch/outputs/sub
printf answer > /scratch/outputs/answer.txt
head -c 100000 /dev/urandom > /scratch/outputs/sub/blob.bin
$R result "{\"accuracy\":0.9}"'
    worker_run w1 "$code"
    assert_success
    run sbx-run verify --key-file "$KEY" "$WORK/w1.jsonl"
    assert_success
    [ "$(jq_out .ok)" = true ]
    events=$(jq -r .event "$WORK/w1.jsonl" | tr '\n' ' ')
    [[ "$events" == "mode started worker.state worker.progress "* ]]
    [[ "$events" == *"worker.metric worker.params worker.tags worker.user_log worker.checkpoint worker.media"*"worker.result finished " ]]
    [ "$(r .worker.result.summary.accuracy)" = 0.9 ]
    [ "$(r .worker.messages)" = 11 ]
    jq -se 'map(select(.event == "worker.params"))[0].params == {"lr":0.01,"epochs":3,"fast":true}' "$WORK/w1.jsonl"
    # Every output and media item is hashed as it was: compare with the files.
    scratch="$STATE/w1/scratch"
    for f in answer.txt sub/blob.bin; do
        want="sha256:$(sha256sum "$scratch/outputs/$f" | cut -d' ' -f1)"
        [ "$(r ".outputs.files[] | select(.path == \"$f\") | .digest")" = "$want" ]
    done
    [ "$(r .outputs.complete)" = true ]
    [ "$(r '.worker.media[0].digest')" = "sha256:$(printf PNGDATA | sha256sum | cut -d' ' -f1)" ]
    [ "$(r '.worker.media[0].caption')" = "the loss" ]
}

@test "progress is coalesced: at most one event per interval, the latest value last" {
    worker_run p1 'for i in $(seq 1 40); do sbx-report progress "0.$(printf %02d $i)"; done; sbx-report progress 1' \
        '{"caps":{"progressIntervalMs":60000}}'
    assert_success
    [ "$(jq -c 'select(.event == "worker.progress") | .progress' "$WORK/p1.jsonl" | tr '\n' ' ')" = "0.01 1 " ]
}

@test "verify rejects a changed byte, a dropped line and two swapped lines" {
    worker_run v1 'sbx-report state a; sbx-report state b; sbx-report state c'
    assert_success
    f="$WORK/v1.jsonl"
    sed '3s/"state":"a"/"state":"A"/' "$f" > "$WORK/changed"
    sed '3d' "$f" > "$WORK/dropped"
    awk 'NR == 3 { held = $0; next } NR == 4 { print; print held; next } { print }' "$f" > "$WORK/swapped"
    run sbx-run verify --key-file "$KEY" "$WORK/changed"
    assert_failure 9
    [ "$(jq_out .line)" = 3 ]
    [[ "$(jq_out .reason)" == "MAC mismatch"* ]]
    run sbx-run verify --key-file "$KEY" "$WORK/dropped"
    assert_failure 9
    [ "$(jq_out .line)" = 3 ]
    [[ "$(jq_out .reason)" == "sequence gap"* ]]
    run sbx-run verify --key-file "$KEY" "$WORK/swapped"
    assert_failure 9
    [ "$(jq_out .line)" = 3 ]
    printf 'KEYMARKER-another-key-entirely' > "$WORK/other"; chmod 600 "$WORK/other"
    run sbx-run verify --key-file "$WORK/other" "$f"
    assert_failure 9
    [ "$(jq_out .line)" = 1 ]
}

@test "garbage on the channel is a sandbox violation; the supervisor survives to report it" {
    worker_run g1 'python3 -c "import os; os.write(int(os.environ[\"SBX_CHANNEL_FD\"]), b\"\\x00\\x00\\x00\\x05hello\"); import time; time.sleep(30)"'
    assert_failure 8
    [ "$(r .failureClass)" = sandbox-violation ]
    [[ "$(r .error)" == *"not valid JSON"* ]]
    run sbx-run verify --key-file "$KEY" "$WORK/g1.jsonl"
    assert_success
}

@test "a 2 GiB frame length is refused before anything is allocated" {
    worker_run g2 'python3 -c "import os; os.write(int(os.environ[\"SBX_CHANNEL_FD\"]), b\"\\x80\\x00\\x00\\x00\" + b\"x\" * 65536); import time; time.sleep(30)"'
    assert_failure 8
    [[ "$(r .error)" == *"2147483648 bytes, over the 1048576 byte maximum"* ]]
    [ "$(r .supervisorMaxRssKiB)" -lt 65536 ]
}

@test "a frame flood hits caps.events and ends as resource-exhausted" {
    worker_run f1 'python3 -c "
import os, json, struct
fd = int(os.environ[\"SBX_CHANNEL_FD\"])
m = json.dumps({\"type\": \"state\", \"state\": \"x\"}).encode()
for i in range(100000):
    os.write(fd, struct.pack(\">I\", len(m)) + m)
"; sleep 30' '{"caps":{"events":50}}'
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [[ "$(r .error)" == *"caps.events"* ]]
    [ "$(jq -c 'select(.event == "worker.state")' "$WORK/f1.jsonl" | wc -l)" -le 50 ]
}

@test "a symlinked media file (to /etc/shadow) and media outside scratch are violations" {
    worker_run m1 'ln -s /etc/shadow /scratch/media/secret.png; sbx-report media secret.png; sleep 30'
    assert_failure 8
    [[ "$(r .error)" == *"secret.png: not a file inside scratch"* ]]
    [ "$(jq -c 'select(.event == "worker.media")' "$WORK/m1.jsonl" | wc -l)" -eq 0 ]
    worker_run m2 'python3 -c "
import os, json, struct
m = json.dumps({\"type\": \"media\", \"path\": \"../../etc/passwd\"}).encode()
os.write(int(os.environ[\"SBX_CHANNEL_FD\"]), struct.pack(\">I\", len(m)) + m)
"; sleep 30'
    assert_failure 8
    [[ "$(r .error)" == *"relative path inside its scratch folder"* ]]
}

@test "a media or checkpoint message naming a FIFO is a violation, promptly; outputs skip a FIFO" {
    # No writer ever opens these: a blocking open would hang the supervisor.
    worker_run f1 'mkfifo /scratch/media/m.fifo; sbx-report media m.fifo; sleep 30' '{"timeoutMs": 60000}'
    assert_failure 8
    [[ "$(r .error)" == *"m.fifo: not a regular file"* ]]
    worker_run f2 'mkfifo /scratch/checkpoints/c.fifo; sbx-report checkpoint c.fifo; sleep 30' '{"timeoutMs": 60000}'
    assert_failure 8
    [[ "$(r .error)" == *"c.fifo: not a regular file"* ]]
    worker_run f3 'mkfifo /scratch/outputs/o.fifo; echo fine > /scratch/outputs/f.txt'
    assert_success
    [ "$(r '[.outputs.files[].path] | join(",")')" = f.txt ]
}

@test "scratch over caps.scratchBytes ends the run as resource-exhausted" {
    worker_run s1 'dd if=/dev/zero of=/scratch/outputs/big bs=64k count=1000 2>/dev/null; sleep 30' '{"caps":{"scratchBytes":1000000}}'
    assert_failure 6
    [[ "$(r .error)" == *"more than caps.scratchBytes (1000000)"* ]]
}

@test "a message after the terminal result is a violation" {
    worker_run t1 'sbx-report result; sbx-report state late; sleep 30'
    assert_failure 8
    [[ "$(r .error)" == *"after the terminal"* ]]
}

@test "advisory caps drop tracking messages with one warning, the run goes on" {
    worker_run a1 'for i in $(seq 1 20); do sbx-report metric m $i; done; echo done' '{"caps":{"trackingMessages":5}}'
    assert_success
    [ "$(r .stdout)" = done ]
    [ "$(jq -c 'select(.event == "worker.metric")' "$WORK/a1.jsonl" | wc -l)" -eq 5 ]
    [ "$(jq -c 'select(.event == "warning" and .code == "cap-reached")' "$WORK/a1.jsonl" | wc -l)" -eq 1 ]
    [ "$(r .worker.trackingDropped)" = true ]
}

@test "the signing key passed on a descriptor is nowhere the workload can read" {
    code='for f in /proc/*/fd/* /proc/*/environ /proc/*/cmdline; do [ -f "$f" ] && cat "$f" 2>/dev/null; done | grep -ac "KEY[M]ARKER" || true
ls /proc/self/fd | tr "\n" " "'
    run --separate-stderr sbx-run --state-dir "$STATE" --signing-key-fd 7 - 7<"$KEY" <<<"$(request k1 "$code")"
    assert_success
    result=$(printf '%s\n' "$output" | jq -c 'select(.event == "finished") | .result')
    [ "$(r .stdout | head -n1)" = 0 ]
    # 0-2, the channel (5) and the fd ls holds open: no key descriptor.
    [ "$(r .stdout | tail -n1)" = "0 1 2 3 5 " ]
    printf '%s\n' "$output" > "$WORK/k1.jsonl"
    run sbx-run verify --key-file "$KEY" "$WORK/k1.jsonl"
    assert_success
}

@test "at the platform deadline (minus the reserve) the worker gets SIGTERM and can flush a checkpoint" {
    code='trap "printf flushed > /scratch/checkpoints/last; sbx-report checkpoint last; printf partial > /scratch/outputs/partial.txt; exit 0" TERM
while :; do sleep 0.05; done'
    worker_run d1 "$code" '{"timeoutMs":600000}' --grace-ms 3000 --platform-deadline-ms 1000 --deadline-reserve-ms 300
    assert_failure 7
    [ "$(r .failureClass)" = timeout ]
    [ "$(r .deadline)" = platform ]
    [[ "$(r .error)" == *"stopped 300 ms before the platform deadline of 1000 ms"* ]]
    jq -se 'map(select(.event == "worker.checkpoint"))[0].path == "last"' "$WORK/d1.jsonl"
    [ "$(r '.outputs.files[0].path')" = partial.txt ]
}

@test "the first event says whether this is dev mode" {
    worker_run dm 'true'
    assert_success
    want=false
    [ "$(id -u)" -eq 0 ] || want=true
    [ "$(jq -r 'select(.event == "mode") | .devMode' "$WORK/dm.jsonl")" = "$want" ]
    [ "$(head -n1 "$WORK/dm.jsonl" | jq -r .event)" = mode ]
}

@test "sbx-report is on PATH, read-only, and Python reports through the sbx_report module, as the README shows" {
    code='command -v sbx-report
sbx-report progress 0.5
{ echo x > /run/sbx/bin/sbx-report; } 2>/dev/null && echo writable
python3 -c "import sbx_report as r; r.metric(\"loss\", 0.25, step=1); r.progress(1.0, message=\"done\"); r.result({\"accuracy\": 0.9})"'
    worker_run py1 "$code"
    assert_success
    [ "$(r .stdout)" = /run/sbx/bin/sbx-report ]
    [ "$(jq -c 'select(.event == "worker.progress") | .progress' "$WORK/py1.jsonl" | tr '\n' ' ')" = "0.5 1 " ]
    [ "$(jq -c 'select(.event == "worker.metric") | [.name, .value, .step]' "$WORK/py1.jsonl")" = '["loss",0.25,1]' ]
    [ "$(jq -c 'select(.event == "worker.result") | .summary' "$WORK/py1.jsonl")" = '{"accuracy":0.9}' ]
    run sbx-run verify --key-file "$KEY" "$WORK/py1.jsonl"
    assert_success
}

@test "the Python module refuses what the supervisor would refuse, before sending: the run goes on" {
    code='python3 - <<"PY"
import sbx_report as r
bad = [lambda: r.progress(2), lambda: r.progress(float("nan")), lambda: r.log("info", "x" * 70000),
       lambda: r.log("loud", "x"), lambda: r.log("info", "caf\udcff"), lambda: r.media("../../etc/passwd"),
       lambda: r.checkpoint("/abs"), lambda: r.metric("m", 2 ** 70), lambda: r.tags(a=1), lambda: r.metric("m", 1, step=-1)]
for i, call in enumerate(bad):
    try:
        call()
        print("sent", i)
    except (ValueError, UnicodeError):
        pass
r.result({"refused": len(bad)})
PY'
    worker_run pyr "$code"
    assert_success
    [ "$(r .stdout)" = "" ]
    [ "$(r .worker.result.summary.refused)" = 10 ]
}

@test "concurrent reporters never split each other's frames: 6 shells and 6 Python threads, 60 KB messages" {
    code='M=$(head -c 60000 /dev/zero | tr "\0" x)
for k in 1 2 3 4 5 6; do (for i in 1 2 3 4 5; do sbx-report log info "$M"; done) & done
python3 -c "
import threading, sbx_report as r
ts = [threading.Thread(target=lambda: [r.log(\"info\", \"y\" * 60000) for _ in range(5)]) for _ in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]"
wait
sbx-report result'
    worker_run conc "$code"
    assert_success
    [ "$(jq -c 'select(.event == "worker.user_log")' "$WORK/conc.jsonl" | wc -l)" -eq 60 ]
}

@test "sbx-report refuses what the supervisor would refuse, and needs the channel" {
    run --separate-stderr env SBX_CHANNEL_FD=1 "$SBX_BIN/sbx-report" progress 2
    assert_failure 2
    [[ "$stderr" == *"from 0 to 1"* ]]
    run --separate-stderr env -u SBX_CHANNEL_FD "$SBX_BIN/sbx-report" state x
    assert_failure 2
    [[ "$stderr" == *"SBX_CHANNEL_FD is not set"* ]]
    run --separate-stderr env SBX_CHANNEL_FD=1 "$SBX_BIN/sbx-report" media ../x
    assert_failure 2
}

@test "exit status for schedulers: 0 ok, 1 for a workload exit 3 or a worker error, 8 for a frame cut off at exit" {
    worker_run x0 'true'
    assert_success
    worker_run x3 'exit 3'
    assert_failure 1
    [ "$(r .exitCode)" = 3 ] && [ "$(r .failureClass)" = null ]
    worker_run xe 'sbx-report error "it broke"'
    assert_failure 1
    [ "$(r .exitCode)" = 0 ]
    worker_run xt 'python3 -c "
import os, struct
os.write(int(os.environ[\"SBX_CHANNEL_FD\"]), struct.pack(\">I\", 100) + b\"{\\\"type\\\":\")
"'
    assert_failure 8
    [[ "$(r .error)" == *"closed in the middle of a frame"* ]]
}

@test "requireTerminalMessage: a worker that ends without result or error is a violation; with either it is not" {
    worker_run rt0 'sbx-report progress 0.5' '{"requireTerminalMessage":true}'
    assert_failure 8
    [ "$(r .failureClass)" = sandbox-violation ]
    [[ "$(r .error)" == *"without the result or error message the request requires (requireTerminalMessage)"* ]]
    worker_run rt1 'sbx-report result "{\"ok\":true}"' '{"requireTerminalMessage":true}'
    assert_success
    worker_run rt2 'sbx-report error broke' '{"requireTerminalMessage":true}'
    assert_failure 1
    [ "$(r .failureClass)" = null ]
    # Not asked for: its absence is nothing.
    worker_run rt3 'sbx-report progress 0.5'
    assert_success
    # A run the timeout ended owes no terminal message.
    worker_run rt4 'sleep 30' '{"requireTerminalMessage":true,"timeoutMs":300}'
    [ "$(r .timedOut)" = true ]
    [[ "$(r .error)" != *requireTerminalMessage* ]]
}

# objects_bytes DIR: the bytes the store's objects hold.
objects_bytes() {
    find "$1/objects" -type f -printf '%s\n' 2>/dev/null | awk '{ n += $1 } END { print n + 0 }'
}

# object_of DIGEST: its path in the run's store.
object_of() {
    local hex=${1#sha256:}
    printf '%s/snapshots/objects/%s/%s' "$STATE" "${hex:0:2}" "${hex:2}"
}

# 20 MiB checkpoints, each a sparse file with its own first bytes.
CHECKPOINT_FLOOD='for i in $(seq 1 200); do
    f=/scratch/checkpoints/c$i
    truncate -s 20M "$f" && printf "checkpoint %s" "$i" | dd of="$f" conv=notrunc status=none
    sbx-report checkpoint "c$i" --step "$i" || exit 0
done; sleep 30'

@test "200 checkpoints of 20 MiB under a 32 MiB quota end resource-exhausted; the store grows by at most the quota; collection keeps only what is reachable" {
    worker_run cf "$CHECKPOINT_FLOOD" '{"maxWorkspaceBytes":33554432,"timeoutMs":60000}'
    assert_failure 6
    [ "$(r .failureClass)" = resource-exhausted ]
    [[ "$(r .error)" == *"checkpoints and media would copy more than 33554432 bytes into the snapshot store (maxWorkspaceBytes)"* ]]
    [ "$(r .worker.storedBytes)" -le 33554432 ]
    [ "$(jq -c 'select(.event == "worker.checkpoint")' "$WORK/cf.jsonl" | wc -l)" = 1 ]
    store="$STATE/snapshots"
    [ "$(objects_bytes "$store")" -le 33554432 ]
    [ -z "$(ls "$store/tmp")" ] && [ -z "$(ls "$store/pins")" ]
    # The workspace was still committed: reachable; the checkpoint is not.
    snapshot=$(r .workspaceSnapshot.digest)
    checkpoint=$(jq -r 'select(.event == "worker.checkpoint") | .digest' "$WORK/cf.jsonl")
    [ -e "$(object_of "$checkpoint")" ]
    run sbx-snap gc --store "$store" --min-age-s 0
    assert_success
    [ ! -e "$(object_of "$checkpoint")" ] && [ -e "$(object_of "$snapshot")" ]
    [ "$(objects_bytes "$store")" -lt 1048576 ]
    run sbx-snap restore "$(r .workspaceSnapshot.ref)" "$WORK/restored" --store "$store"
    assert_success
}

@test "caps.storedBytes bounds checkpoints and media in all; caps.mediaBytes one item" {
    code='head -c 600 /dev/zero > /scratch/media/a.bin; head -c 600 /dev/urandom > /scratch/checkpoints/b
sbx-report media a.bin; sbx-report checkpoint b; sleep 30'
    worker_run sb "$code" '{"caps":{"storedBytes":1000},"timeoutMs":60000}'
    assert_failure 6
    [[ "$(r .error)" == *"checkpoints/b: checkpoints and media would copy more than 1000 bytes into the snapshot store (caps.storedBytes)"* ]]
    [ "$(r .worker.storedBytes)" = 600 ]
    worker_run mb 'head -c 200 /dev/zero > /scratch/media/a.bin; sbx-report media a.bin; sleep 30' \
        '{"caps":{"mediaBytes":100},"timeoutMs":60000}'
    assert_failure 6
    [[ "$(r .error)" == *"media/a.bin: larger than caps.mediaBytes (100 bytes)"* ]]
    run --separate-stderr sbx-run --state-dir "$STATE" - <<<"$(request bad true '{"caps":{"storedBytes":-1}}')"
    assert_failure 2
    [[ "$stderr" == *"caps.storedBytes"* ]]
}

@test "two runs over an unchanged tree add no manifest object and no version" {
    echo data > "$WS/f"
    worker_run u1 'true'
    assert_success
    first=$(r .workspaceSnapshot.digest)
    ref=$(r .workspaceSnapshot.ref)
    store="$STATE/snapshots"
    count=$(find "$store/objects" -type f | wc -l)
    worker_run u2 'true'
    assert_success
    [ "$(r .workspaceSnapshot.digest)" = "$first" ]
    [ "$(r .workspaceSnapshot.manifestStored)" = false ]
    [ "$(find "$store/objects" -type f | wc -l)" = "$count" ]
    [ "$(sbx-snap log --ref "$ref" --store "$store" | wc -l)" = 1 ]
}

@test "a checkpoint is pinned while its run lives: a collection then spares it, the next after the run does not" {
    mkfifo -m 666 "$WS/go"
    store="$STATE/snapshots"
    digest="sha256:$(printf ck-live | sha256sum | cut -d' ' -f1)"
    ( sbx-run --state-dir "$STATE" - <<<"$(request pin 'printf ck-live > /scratch/checkpoints/live
sbx-report checkpoint live; read go < go' '{"timeoutMs":60000}')" > "$WORK/pin.jsonl" 2>/dev/null ) &
    bg=$!
    release() { timeout 30 sh -c 'echo go > "$1"' sh "$WS/go"; wait "$bg"; }
    eventually sh -c 'grep -qs "$1" "$2"/pins/run.*' sh "$digest" "$store" || { release; false; }
    run sbx-snap gc --store "$store" --min-age-s 0
    release
    assert_success
    [ "$(jq_out .pinnedRuns)" = 1 ]
    [ -e "$(object_of "$digest")" ]
    [ "$(jq -c 'select(.event == "finished") | .status' "$WORK/pin.jsonl")" = 0 ]
    [ -z "$(ls "$store/pins")" ]
    run sbx-snap gc --store "$store" --min-age-s 0
    [ ! -e "$(object_of "$digest")" ]
}

@test "after a run sbx-run starts one detached collection when due (--gc-interval-s), never more often" {
    store="$STATE/snapshots"
    worker_run g1 'printf old-checkpoint > /scratch/checkpoints/c; sbx-report checkpoint c' '{}' --no-gc
    assert_success
    [ ! -e "$store/gc.lock" ]
    checkpoint=$(jq -r 'select(.event == "worker.checkpoint") | .digest' "$WORK/g1.jsonl")
    find "$store/objects" -type f -exec touch -d '2 hours ago' {} +
    worker_run g2 'true' '{}' --gc-interval-s 0
    assert_success
    flock "$store/gc.lock" true   # the collection holds it until it ends
    [ "$(jq .removed "$store/gc.json")" -ge 1 ]
    [ ! -e "$(object_of "$checkpoint")" ]
    run sbx-snap restore "$(r .workspaceSnapshot.ref)" "$WORK/restored" --store "$store"
    assert_success
    # Not due: the last collection is younger than the interval.
    stamp=$(stat -c %i "$store/gc.json")
    worker_run g3 'true' '{}' --gc-interval-s 3600
    assert_success
    flock "$store/gc.lock" true
    [ "$(stat -c %i "$store/gc.json")" = "$stamp" ]
}
