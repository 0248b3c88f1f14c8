#!/bin/sh
# request → run → verify: one supervised execution whose event stream is
# signed with a key only the caller holds, then checked line by line.
# Usage: run-and-verify.sh WORKSPACE CODE
set -eu
ws=$1 code=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The state dir is the sandbox user's to reach (its scratch lives there);
# the key stays the caller's alone.
chmod 755 "$dir"
(umask 077 && head -c 32 /dev/urandom > "$dir/key")
jq -cn --arg ws "$ws" --arg code "$code" --arg id "example-$(date +%s%N)" \
    '{executionId: $id, language: "shell", code: $code, workspace: $ws}' |
    sbx-run --state-dir "$dir/state" --signing-key-file "$dir/key" - > "$dir/events" || true
sbx-run verify --key-file "$dir/key" "$dir/events" | jq -c .
jq -c 'select(.event == "finished") | .result | {exitCode, stdout, createdFiles}' "$dir/events"
