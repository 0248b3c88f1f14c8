#!/bin/sh
# The egress decision for a host, without connecting anywhere: which
# allowlist entry matches, which addresses are vetted, or why it is refused.
# Usage: egress-check.sh POLICY.json HOST[:PORT] [--resolve NAME:PORT:ADDR]...
set -eu
policy=$1 target=$2
shift 2
exec sbx-egress check --policy "$policy" "$@" "$target"
