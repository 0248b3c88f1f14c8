#!/bin/sh
# make run: sbx-httpd in the foreground with the embedded defaults, its
# data dir .sciencediscovery-data in the checkout, and a random token kept
# in a 0600 file (created once) and printed.
set -eu
cd "$(dirname "$0")/.."
data=.sciencediscovery-data
token_file="$data/runner-token"
mkdir -p "$data"
if [ ! -s "$token_file" ]; then
    (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$token_file")
fi
chmod 600 "$token_file"
echo "sbx-httpd: http://${SCIENCE_AGENT_RUNNER_HOST:-127.0.0.1}:${SCIENCE_AGENT_RUNNER_PORT:-4311}"
echo "token (in $token_file): $(cat "$token_file")"
SCIENCE_AGENT_DATA_DIR="$data" SCIENCE_AGENT_RUNNER_TOKEN="$(cat "$token_file")" exec bin/sbx-httpd
