#!/bin/sh
# probe → spec → launch, one stage per step: refuse a host that cannot
# sandbox, build a launch spec with jq, look at the plan, then run it.
# Usage: probe-spec-launch.sh WORKSPACE COMMAND...
set -eu
ws=$1
shift
sbx-probe > /dev/null || { echo "this host cannot sandbox: run sbx-probe for the remedy" >&2; exit 4; }
# argv one word at a time, so none of them is read as a jq option.
argv='[]'
for word in "$@"; do
    argv=$(printf '%s' "$argv" | jq -c --arg w "$word" '. + [$w]')
done
spec=$(jq -cn --arg ws "$ws" --argjson argv "$argv" '{argv: $argv, workspace: $ws, network: {mode: "none"}}')
# The plan, without running anything: bwrap's argv, the environment, the filter.
printf '%s\n' "$spec" | sbx-launch --dry-run - | jq -c '{seccompProfile, cwd, env: (.env | keys)}' >&2
printf '%s\n' "$spec" | exec sbx-launch -
