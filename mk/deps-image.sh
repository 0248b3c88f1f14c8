#!/bin/sh
# Installs what `make image` and test/bats/container.bats need (podman,
# buildah, mmdebstrap, runc and the rootless helpers) with apt-get;
# idempotent: when every package is installed it touches nothing. crun is
# not wanted: it refuses hosts with hybrid cgroups, runc runs there.
set -eu
PACKAGES="podman buildah mmdebstrap runc uidmap slirp4netns fuse-overlayfs
containernetworking-plugins debian-archive-keyring"

# shellcheck disable=SC2086
exec sh "$(dirname "$0")/apt-install.sh" deps-image $PACKAGES
