#!/bin/sh
# Installs what test/bats/slurm.bats needs (slurmctld, slurmd, munge and
# the client commands) with apt-get; idempotent. The suite starts its own
# munged, slurmctld and slurmd with a private key and slurm.conf: the
# packages' services and /etc/slurm, /etc/munge are never used.
set -eu
PACKAGES="slurmctld slurmd slurm-client munge"

# shellcheck disable=SC2086
exec sh "$(dirname "$0")/apt-install.sh" deps-slurm $PACKAGES
