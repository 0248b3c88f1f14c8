#!/bin/sh
# Builds the container image localhost/sbx:VERSION (and :latest): a Debian 12
# base made with mmdebstrap, cached by its recipe, plus `make install`.
# Usage: mk/image.sh VERSION BUILD_ID   (what `make image` runs)
#
# Why mmdebstrap: no container registry is reachable from where sbx is built
# and tested (only Debian's archive is), so `FROM debian:bookworm` cannot be
# pulled. mmdebstrap makes the same rootfs from deb.debian.org, with only
# the packages the sbx programs need, and podman imports it as the base.
set -eu
cd "$(dirname "$0")/.."
VERSION=${1:?usage: mk/image.sh VERSION BUILD_ID}
BUILD_ID=${2:-unknown}
IMAGE=localhost/sbx
OUT=build/image
# Flags for this kind of host, harmless elsewhere: runc (crun refuses hybrid
# cgroup v1/v2 hosts), cgroupfs and file events (no systemd as PID 1).
PODMAN="podman --runtime runc --cgroup-manager cgroupfs --events-backend file"

die() { echo "image: $*" >&2; exit 1; }
[ "${SAN:-}" != 1 ] || die "SAN=1: an image of sanitizer builds would need libasan; run make image without SAN"
for t in mmdebstrap podman; do
    command -v "$t" >/dev/null || die "$t is not installed; run make deps-image (mk/deps-image.sh)"
done
[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap's root mode and root podman storage)"
start=$(date +%s)

# The runtime packages: bwrap and jq (the stages run them), the libraries
# the programs in bin/ link (ldd bin/*; apt adds their own dependencies),
# libcurl4 (sbx-run dlopens libcurl.so.4 in job mode), ca-certificates
# (HTTPS to the store), python3 (python workloads, sbx_report.py), passwd
# (useradd for the workload user below).
PACKAGES="bubblewrap jq ca-certificates libjansson4 libseccomp2 libcap-ng0 libssl3
libmicrohttpd12 libsqlite3-0 libcurl4 python3 passwd"
SUITE=bookworm
MIRRORS="deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main"
# The dedicated workload uid: sbx-launch, started as root, runs workloads as
# the "sbx" user (src/lib/run_as.c; 10001 when there is none); pinned so a
# pod's volumes and a host's files see the same uid every build.
SBX_UID=10001
HOOK="useradd --system -K SYS_UID_MAX=$SBX_UID -K SYS_GID_MAX=$SBX_UID --uid $SBX_UID --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sbx"

# The cache key: everything that shapes the base. A new Debian point
# release does not change it; delete build/image/base-*.tar (or
# `make image IMAGE_REFRESH=1`) to take the archive's updates.
key=$(printf '%s\n' "$SUITE" "$MIRRORS" $PACKAGES "$HOOK" "essential v1" | sha256sum | cut -c1-16)
base_tar="$OUT/base-$key.tar"
base_img="$IMAGE-base:$key"
mkdir -p "$OUT"
[ "${IMAGE_REFRESH:-}" != 1 ] || rm -f "$base_tar"
if [ ! -s "$base_tar" ]; then
    echo "image: mmdebstrap $SUITE ($key) ..."
    # essential: dpkg and the Essential set only (no apt in the image: it is
    # never updated in place, it is rebuilt). Docs, man pages and locales
    # of the Debian packages are left out; copyright files stay.
    # The archive is the one network dependency of the build: a dropped
    # connection or a mirror mid-sync fails one download, so three tries.
    # Descriptors 3-9 closed for it: mmdebstrap hands apt the next free
    # one for a hook that /bin/sh runs as "cat >&N", and dash refuses
    # N >= 10 ("Bad fd number"), which is what a caller holding a few
    # descriptors (bats, the test pool's lock) made it pick.
    try=1
    until mmdebstrap --variant=essential --format=tar \
        --include="$(echo $PACKAGES | tr ' ' ,)" \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --customize-hook="chroot \"\$1\" $HOOK" \
        --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
        "$SUITE" "$base_tar.tmp" "$MIRRORS" 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; do
        rm -f "$base_tar.tmp"
        [ "$try" -lt 3 ] || die "mmdebstrap failed $try times (is deb.debian.org reachable?)"
        echo "image: mmdebstrap failed (try $try of 3); again in $((try * 10)) s"
        sleep $((try * 10))
        try=$((try + 1))
    done
    mv "$base_tar.tmp" "$base_tar"
    # Older bases (another recipe) are dropped with their images.
    for old in "$OUT"/base-*.tar; do
        [ "$old" = "$base_tar" ] || rm -rf "$old"
    done
fi
if ! $PODMAN image exists "$base_img"; then
    echo "image: importing $base_tar as $base_img"
    $PODMAN images --format '{{.Repository}}:{{.Tag}}' | grep "^$IMAGE-base:" | xargs -r $PODMAN rmi -f >/dev/null || true
    $PODMAN import --quiet "$base_tar" "$base_img" >/dev/null
fi

# The programs, share/ and the man pages, as `make install` lays them out.
ctx="$OUT/ctx"
rm -rf "$ctx"
mkdir -p "$ctx"
make --no-print-directory install DESTDIR="$PWD/$ctx/root" PREFIX=/usr/local >/dev/null
cp Containerfile "$ctx/Containerfile"
# What the image is made of: the base, the Containerfile and every staged
# file (content and mode). An image that carries it is current.
content=$( (echo "$base_img"; cat Containerfile;
    cd "$ctx/root" && find . -type f -print0 | sort -z | xargs -0 stat -c '%a %n' &&
    find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
have=$($PODMAN image inspect --format '{{index .Labels "sbx.content"}}' "$IMAGE:$VERSION" 2>/dev/null || true)
have_latest=$($PODMAN image inspect --format '{{.Id}}' "$IMAGE:latest" 2>/dev/null || true)
have_version=$($PODMAN image inspect --format '{{.Id}}' "$IMAGE:$VERSION" 2>/dev/null || true)
if [ "$have" = "$content" ] && [ "$have_latest" = "$have_version" ]; then
    echo "image: $IMAGE:$VERSION is current ($content)"
else
    echo "image: building $IMAGE:$VERSION ($content)"
    $PODMAN build --quiet --pull=never --build-arg BASE="$base_img" \
        --label sbx.content="$content" --label org.opencontainers.image.version="$VERSION" \
        --label org.opencontainers.image.revision="$BUILD_ID" \
        -t "$IMAGE:$VERSION" -t "$IMAGE:latest" -f "$ctx/Containerfile" "$ctx" >/dev/null
    # The images this replaced, untagged now: only sbx's own are pruned.
    $PODMAN image prune --force --filter label=sbx.image=1 >/dev/null 2>&1 || true
fi
size=$($PODMAN image inspect --format '{{.Size}}' "$IMAGE:$VERSION")
echo "image: $IMAGE:$VERSION and :latest, $((size / 1048576)) MiB, $(( $(date +%s) - start )) s"
