#!/usr/bin/env bash
# Installs what the verbs runtime needs (issue 17), idempotently:
# - to build with `--features rdma`: CMake and libclang (rdma-mummy-sys builds rdma-core's stub
#   libraries with CMake and generates its bindings with bindgen);
# - to run on a device: rdma-core's libraries and providers (libibverbs1, librdmacm1,
#   ibverbs-providers), rdma-core's tools (rdma, ibv_devices) and perftest (ib_write_lat and
#   ib_write_bw, to hold beside `harness bench transport --runtime verbs`).
# Debian and Ubuntu; run as root or with sudo available. Prints what it installed.
set -euo pipefail

packages=(cmake libclang-dev clang rdma-core libibverbs1 librdmacm1 ibverbs-providers
          ibverbs-utils libibverbs-dev perftest iproute2)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "verbs-deps: everything is installed"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "verbs-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "verbs-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "verbs-deps: installed ${missing[*]}"
