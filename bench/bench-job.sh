#!/bin/bash
# A job's output upload (sbx-run job mode: POST policy, streamed and hashed)
# of SIZE_MIB (default 1024) against curl posting the same bytes with the
# same kind of grant to the same loopback store (s3rver behind
# test/fixtures/s3-store.mjs), in one run; sbx-run's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MIB=${SIZE_MIB:-1024}
[ "$(id -u)" -eq 0 ] || { echo "bench-job: job mode runs as root (skipped)"; exit 0; }
[ -d test/node/node_modules/s3rver ] || { echo "bench-job: test/node/node_modules missing: make deps (skipped)"; exit 0; }
work=$(mktemp -d /tmp/sbx-bench-job.XXXXXX)
chmod 755 "$work"
node test/fixtures/s3-store.mjs --dir "$work/store" --port-file "$work/port" 2> "$work/store.err" &
store=$!
trap 'kill $store 2>/dev/null; wait $store 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 300); do [ -s "$work/port" ] && break; read -rt 0.05 <> <(:) || true; done
endpoint="http://127.0.0.1:$(cat "$work/port")"
cpl() { node test/fixtures/control-plane.mjs --endpoint "$endpoint" "$@" 2>/dev/null; }
mkdir -p "$work/ws" "$work/data"
head -c 32 /dev/urandom > "$work/key"
chmod 600 "$work/key"
jq -cn --arg ws "$work/ws" --arg code "head -c $((SIZE_MIB << 20)) /dev/urandom > /scratch/outputs/big.bin" \
    '{language: "shell", code: $code, workspace: $ws,
      caps: {outputBytes: 1099511627776, scratchBytes: 1099511627776}}' > "$work/request.json"
head -c $((SIZE_MIB << 20)) /dev/urandom > "$work/anchor.bin"
ms_of() { date -d "$1" +%s%3N; }

best_job=999999999 best_curl=999999999 rss=0
for i in 1 2 3; do
    url=$(cpl bootstrap --run-id "bench-$i" --nonce "nonce-bench-$i" --request "$work/request.json" \
          --key-file "$work/key" | jq -r .bootstrapUrl)
    env -i PATH="$PATH:$PWD/bin" SBX_DATA_DIR="$work/data" MAPI_RUN_ID="bench-$i" MAPI_NONCE="nonce-bench-$i" \
        MAPI_BOOTSTRAP_URL="$url" bin/sbx-run > "$work/events" 2> "$work/err" || { tail -3 "$work/err"; exit 1; }
    # The upload phase: from the sandbox's end to the upload event.
    ended=$(jq -r 'select(.event == "finished") | .result.finishedAt' "$work/events")
    sent=$(jq -r 'select(.event == "upload") | .at' "$work/events")
    t=$(( $(ms_of "$sent") - $(ms_of "$ended") ))
    [ "$t" -ge "$best_job" ] || best_job=$t
    rss=$(jq -r 'select(.event == "finished") | .result.supervisorMaxRssKiB' "$work/events")
    # The anchor: curl with another run's outputs grant, the file last.
    url=$(cpl bootstrap --run-id "anchor-$i" --nonce n-anchor --request "$work/request.json" --key-file "$work/key" | jq -r .bootstrapUrl)
    doc=$(curl -sS "$url")
    form=()
    while IFS=$'\t' read -r k v; do
        [ "$k" = key ] && v=${v/\$\{filename\}/big.bin}
        form+=(-F "$k=$v")
    done < <(jq -r '.uploads.outputs.fields | to_entries[] | [.key, .value] | @tsv' <<< "$doc")
    s=$(date +%s%N)
    code=$(curl -sS -o /dev/null -w '%{http_code}' "${form[@]}" -F "file=@$work/anchor.bin" \
           "$(jq -r .uploads.outputs.url <<< "$doc")")
    t=$(( ($(date +%s%N) - s) / 1000000 ))
    [ "$code" = 204 ] || { echo "bench-job: the anchor upload got HTTP $code"; exit 1; }
    [ "$t" -ge "$best_curl" ] || best_curl=$t
done
echo "job output upload ${SIZE_MIB} MiB: sbx-run ${best_job} ms (POST policy, hashed), curl -F ${best_curl} ms (best of 3)"
echo "job upload ratio against curl: $(awk -v a="$best_job" -v b="$best_curl" 'BEGIN { printf "%.3f", a / b }')"
echo "job sbx-run peak RSS: ${rss} KiB"
