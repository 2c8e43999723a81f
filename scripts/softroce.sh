#!/usr/bin/env bash
# SoftRoCE (rdma_rxe): an RDMA device in software on an Ethernet interface, so the verbs runtime
# and its conformance suite run on a machine without an RDMA NIC (issue 17).
#
#   scripts/softroce.sh [IFACE] [NAME]   create device NAME (default rxe0) on IFACE (default:
#                                        the first interface that is up and not loopback)
#   scripts/softroce.sh --remove [NAME]  delete it
#
# Needs root and a kernel with rdma_rxe (CONFIG_RDMA_RXE): on Ubuntu it ships in
# linux-modules-extra-$(uname -r), which this script installs if the module is missing. When the
# device cannot be made it says exactly why and exits non-zero. Then:
#   RDMA_DEVICE=NAME cargo test -p verbs --features rdma
set -euo pipefail

die() { echo "softroce: $*" >&2; exit 2; }
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "needs root (or sudo) to load rdma_rxe and add a device"
  sudo="sudo"
fi
command -v rdma >/dev/null || die "the 'rdma' tool (iproute2) is missing: scripts/verbs-deps.sh installs it"

if [ "${1:-}" = "--remove" ]; then
  name="${2:-rxe0}"
  $sudo rdma link delete "$name" && echo "softroce: removed $name"
  exit 0
fi

iface="${1:-}"
name="${2:-rxe0}"
if [ -z "$iface" ]; then
  iface=$(ip -o link show up | awk -F': ' '$2 != "lo" {sub(/@.*/, "", $2); print $2; exit}')
  [ -n "$iface" ] || die "no network interface is up besides loopback: name one"
fi
[ -e "/sys/class/net/$iface" ] || die "no interface named $iface (ip link lists them)"

if [ ! -d /sys/module/rdma_rxe ]; then
  if ! $sudo modprobe rdma_rxe 2>/dev/null; then
    if command -v apt-get >/dev/null && [ ! -e "/lib/modules/$(uname -r)/kernel/drivers/infiniband/sw/rxe" ]; then
      echo "softroce: rdma_rxe is not installed; trying linux-modules-extra-$(uname -r)"
      $sudo apt-get install -y -qq "linux-modules-extra-$(uname -r)" >/dev/null 2>&1 || true
    fi
    $sudo modprobe rdma_rxe 2>/dev/null || {
      if [ ! -d /sys/class/infiniband ] && ! grep -qs ib_core /proc/modules && [ ! -d /sys/module/ib_core ]; then
        die "this kernel ($(uname -r)) has no InfiniBand/RDMA support (no ib_core), so SoftRoCE cannot run here"
      fi
      die "this kernel ($(uname -r)) has no rdma_rxe module (CONFIG_RDMA_RXE is off, and no linux-modules-extra package provides it), so SoftRoCE cannot run here"
    }
  fi
fi

if rdma link show 2>/dev/null | grep -q "link $name/"; then
  echo "softroce: $name exists already"
else
  $sudo rdma link add "$name" type rxe netdev "$iface" || die "'rdma link add $name type rxe netdev $iface' failed"
  echo "softroce: created $name on $iface"
fi
rdma link show "$name/1" || true
if command -v ibv_devinfo >/dev/null; then
  ibv_devinfo -d "$name" | grep -E "hca_id|state|active_mtu|link_layer" || die "ibv_devinfo does not see $name: is rdma-core installed (scripts/verbs-deps.sh)?"
fi
echo "softroce: export RDMA_DEVICE=$name"
