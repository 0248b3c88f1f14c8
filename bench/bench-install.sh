#!/bin/bash
# The install sandbox's cost: `sbx-env install` and `uninstall` of one package
# with the fake micromamba (each a micromamba call, micromamba list and the
# Python inventory, every one in its own install sandbox) against the same
# six tool calls run directly on the host on a copy of the same prefix, in
# one run (median of 7); ours also holds sbx-env's own records and fsyncs.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
source bench/lib.sh
work=$(mktemp -d)
chmod 711 "$work"
trap 'rm -rf "$work"' EXIT
export SBX_DATA_DIR="$work/data" SCIENCE_AGENT_PROVISIONER_PATH="$top/test/fixtures/fake-micromamba" \
    FAKE_MICROMAMBA_CHANNELS="$top/test/fixtures/channels" SBX_ENV_INSTALL_READ_ONLY="$top/test/fixtures/channels" \
    SBX_ENV_INSTALL_PASS_ENV=FAKE_MICROMAMBA_CHANNELS PATH="$top/bin:/usr/bin:/bin"
unset SCIENCE_AGENT_PACKAGE_CACHE_DIR SCIENTIFIC_ENVS SCIENCE_AGENT_SCIENTIFIC_CHANNELS
[ "$(id -u)" -ne 0 ] || { id sbxtest >/dev/null 2>&1 && export SBX_ENV_RUN_AS=sbxtest; }
bin/sbx-env setup --wait >/dev/null 2>&1
id=$(bin/sbx-env create Bench --language python | jq -r .id)
prefix=$(bin/sbx-env resolve --revision "$(bin/sbx-env list | jq -r ".[] | select(.id == \"$id\") | .currentRevisionId")" \
    --language python | jq -r .prefix)
cp -a "$prefix" "$work/direct"
inventory="import importlib.metadata as m, json; print(json.dumps([d.metadata['Name'] for d in m.distributions()]))"
direct() {
    "$SCIENCE_AGENT_PROVISIONER_PATH" --no-rc install --yes --strict-channel-priority --override-channels \
        --prefix "$work/direct" --channel conda-forge -- requests
    "$SCIENCE_AGENT_PROVISIONER_PATH" --no-rc list --json --prefix "$work/direct"
    "$work/direct/bin/python" -I -c "$inventory"
    "$SCIENCE_AGENT_PROVISIONER_PATH" --no-rc remove --yes --prefix "$work/direct" -- requests
    "$SCIENCE_AGENT_PROVISIONER_PATH" --no-rc list --json --prefix "$work/direct"
    "$work/direct/bin/python" -I -c "$inventory"
}
boxed() {
    bin/sbx-env install "$id" -- requests
    bin/sbx-env uninstall "$id" -- requests
}
a=() o=()
for _ in 1 2 3 4 5 6 7; do
    s=$(date +%s%N); direct >/dev/null 2>&1; a+=($(( $(date +%s%N) - s )))
    s=$(date +%s%N); boxed >/dev/null 2>&1; o+=($(( $(date +%s%N) - s )))
done
awk -v a="$(median "${a[@]}")" -v o="$(median "${o[@]}")" 'BEGIN {
    printf "install: an install and a remove with their inventories (6 tool calls), sandboxed %.1f ms, direct %.1f ms: ratio %.2f (%.1f ms a call)\n", o / 1e6, a / 1e6, o / a, (o - a) / 6e6 }'
