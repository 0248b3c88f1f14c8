# httpd-work.sh NAME — sourced by the benchmarks that start sbx-httpd (with
# httpd-start.sh): a work dir /tmp/sbx-bench-NAME.*, mode 755 (the sandbox
# uid reaches the data dir below it), removed at exit with the daemon.
work=$(mktemp -d "/tmp/sbx-bench-$1.XXXXXX")
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
chmod 755 "$work"
