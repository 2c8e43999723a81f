#!/usr/bin/env bash
# Installs the yardsticks the tcp runtime's benchmarks hold it against, idempotently: qperf
# (`harness bench transport --runtime tcp --qperf`: raw TCP latency and bandwidth) and Open MPI
# with its compiler wrapper (`harness bench bcast`: MPI_Bcast over its tcp transport).
# Debian and Ubuntu; run as root or with sudo available. Prints what it installed.
set -euo pipefail
source "$(dirname "$0")/apt-install.sh"
apt_install bench-deps qperf openmpi-bin libopenmpi-dev
