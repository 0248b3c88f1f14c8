#!/bin/sh
# apt-install.sh LABEL PACKAGE...: installs the packages not yet installed
# with apt-get (sudo when not root); touches nothing when all are there.
set -eu
label=$1
shift
missing=""
for p in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "$label: all $# packages installed"
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "$label: installing:$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
