#!/bin/sh
# Refuses to start a job on a host that cannot sandbox, or that runs a weaker
# profile than policy allows; prints each warning's remedy for the operator.
# Usage: probe-gate.sh [--allow-degraded] -- command ...
set -eu
allow_degraded=false
[ "${1:-}" = --allow-degraded ] && { allow_degraded=true; shift; }
[ "${1:-}" = -- ] && shift

answer=$(sbx-probe 2>/dev/null) || {
    printf '%s\n' "$answer" | jq -r '.warnings[] | "sbx: \(.message)\n  remedy: \(.remedy)"' >&2
    exit 4
}
if [ "$allow_degraded" = false ] &&
    [ "$(printf '%s\n' "$answer" | jq -r .reason)" != supported ]; then
    printf '%s\n' "$answer" | jq -r '.warnings[] | "sbx: \(.message)\n  remedy: \(.remedy)"' >&2
    exit 3
fi
exec "$@"
