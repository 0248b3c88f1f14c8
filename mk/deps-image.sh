#!/bin/sh
# Installs what `make image` and test/bats/container.bats need (podman,
# buildah, mmdebstrap, runc and the rootless helpers) with apt-get;
# idempotent: when every package is installed it touches nothing. crun is
# not wanted: it refuses hosts with hybrid cgroups, runc runs there.
set -eu
PACKAGES="podman buildah mmdebstrap runc uidmap slirp4netns fuse-overlayfs
containernetworking-plugins debian-archive-keyring"

missing=""
for p in $PACKAGES; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "deps-image: all $(echo $PACKAGES | wc -w) packages installed"
    exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "deps-image: installing:$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
