#!/bin/sh
# Installs every build and test dependency of sbx with apt-get; idempotent:
# when every package is already installed it touches nothing.
set -eu
PACKAGES="build-essential clang pkg-config bubblewrap jq libseccomp-dev libcap-ng-dev
libssl-dev libjansson-dev libmicrohttpd-dev libsqlite3-dev libcmocka-dev bats
bats-support bats-assert scdoc curl python3 util-linux passwd openssl nodejs
libcurl4-openssl-dev cppcheck clang-tidy valgrind python3-yaml strace python3-requests
python3-prometheus-client xfsprogs"

# The tests' Node.js packages (test/node/package-lock.json): npm ci when
# node_modules is missing or older than the lock; silent when up to date.
node_deps() {
    node_dir="$(cd "$(dirname "$0")/.." && pwd)/test/node"
    [ -f "$node_dir/package-lock.json" ] || return 0
    [ ! -d "$node_dir/node_modules" ] || [ "$node_dir/package-lock.json" -nt "$node_dir/node_modules" ] || return 0
    if ! command -v npm > /dev/null; then
        # Debian's nodejs comes without npm (NodeSource's has it).
        echo "deps: installing npm"
        SUDO=""
        [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm ||
            { echo "deps: npm could not be installed: the S3 suites will skip"; return 0; }
    fi
    echo "deps: npm ci --prefix test/node"
    npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error
    touch "$node_dir/node_modules"
}

# shellcheck disable=SC2086
sh "$(dirname "$0")/apt-install.sh" deps $PACKAGES
node_deps
