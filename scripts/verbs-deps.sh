#!/usr/bin/env bash
# Installs what the verbs runtime needs (issue 17), idempotently:
# - to build with `--features rdma`: CMake and libclang (rdma-mummy-sys builds rdma-core's stub
#   libraries with CMake and generates its bindings with bindgen);
# - to run on a device: rdma-core's libraries and providers (libibverbs1, librdmacm1,
#   ibverbs-providers), rdma-core's tools (rdma, ibv_devices) and perftest (ib_write_lat and
#   ib_write_bw, to hold beside `harness bench transport --runtime verbs`).
# Debian and Ubuntu; run as root or with sudo available. Prints what it installed.
set -euo pipefail
source "$(dirname "$0")/apt-install.sh"
apt_install verbs-deps cmake libclang-dev clang rdma-core libibverbs1 librdmacm1 ibverbs-providers \
  ibverbs-utils libibverbs-dev perftest iproute2
