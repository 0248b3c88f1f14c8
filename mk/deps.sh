#!/bin/sh
# Installs every build and test dependency of sbx with apt-get; idempotent:
# when every package is already installed it touches nothing.
set -eu
PACKAGES="build-essential clang pkg-config bubblewrap jq libseccomp-dev libcap-ng-dev
libssl-dev libjansson-dev libmicrohttpd-dev libsqlite3-dev libcmocka-dev bats
bats-support bats-assert scdoc curl python3 util-linux passwd openssl nodejs
libcurl4-openssl-dev cppcheck clang-tidy valgrind python3-yaml"

missing=""
for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "deps: all $(echo $PACKAGES | wc -w) packages installed"
    exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps: installing:$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
