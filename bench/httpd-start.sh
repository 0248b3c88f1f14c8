# httpd-start.sh — sourced by the benchmarks that drive sbx-httpd: starts
# it on an ephemeral loopback port in $work/data (token bench-token) and
# sets $pid and $base once it listens (read from --ready-fd, no sleeps).
export SCIENCE_AGENT_DATA_DIR="$work/data" SCIENCE_AGENT_RUNNER_TOKEN=bench-token SCIENCE_AGENT_RUNNER_PORT=0
mkfifo "$work/ready"
bin/sbx-httpd --ready-fd 3 3>"$work/ready" 2>"$work/httpd.err" &
pid=$!
read -r ready < "$work/ready"
base="http://127.0.0.1:$(jq -r .port <<< "$ready")"
