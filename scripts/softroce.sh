#!/usr/bin/env bash
# SoftRoCE (rdma_rxe): an RDMA device in software on an Ethernet interface, so the verbs runtime
# and its conformance suite run on a machine without an RDMA NIC (issue 17, issue 48 part 4).
#
#   scripts/softroce.sh [--exclusive] [IFACE] [NAME]
#                                        create device NAME (default rxe0) on IFACE (default:
#                                        the interface of the default route, else the first one
#                                        that is up and not loopback)
#   scripts/softroce.sh --remove [NAME]  delete it
#
#   --exclusive  first unload the host's RDMA drivers (mlx5_ib, mana_ib and the like: an Azure VM,
#                such as a GitHub runner, has them for its accelerated networking), so that
#                ibv_get_device_list sees NAME alone; fails if another device is left. Only the
#                RDMA half of each driver goes (mlx5_ib, not mlx5_core): the network stays up.
#
# Needs root or sudo, and a kernel with InfiniBand (ib_core). rdma_rxe is loaded if the kernel has
# it; else, on Debian/Ubuntu, linux-modules-extra-$(uname -r) is tried; else it is built out of
# tree for the running kernel by scripts/rxe-module.sh. When the device cannot be made it says
# exactly why and exits 2. Run it as the user who will use the device (it calls sudo itself), so
# that ibv_devinfo below uses that user's LD_LIBRARY_PATH (scripts/rdma-core-build.sh). Then:
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

exclusive=0
if [ "${1:-}" = "--exclusive" ]; then exclusive=1; shift; fi
iface="${1:-}"
name="${2:-rxe0}"
if [ -z "$iface" ]; then
  iface=$(ip -o -4 route show to default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
  [ -n "$iface" ] || iface=$(ip -o link show up | awk -F': ' '$2 != "lo" {sub(/@.*/, "", $2); print $2; exit}')
  [ -n "$iface" ] || die "no network interface is up besides loopback: name one"
fi
[ -e "/sys/class/net/$iface" ] || die "no interface named $iface (ip link lists them)"

# ib_core: without it nothing below can work, so say that first and plainly.
has_ib_core() {
  [ -d /sys/module/ib_core ] || { command -v modinfo >/dev/null && modinfo ib_core >/dev/null 2>&1; }
}

if [ ! -d /sys/module/rdma_rxe ]; then
  if ! $sudo modprobe rdma_rxe 2>/dev/null; then
    if ! has_ib_core; then
      die "this kernel ($(uname -r)) has no InfiniBand/RDMA support (no ib_core), so SoftRoCE cannot run here"
    fi
    if command -v apt-get >/dev/null && [ ! -e "/lib/modules/$(uname -r)/kernel/drivers/infiniband/sw/rxe" ]; then
      echo "softroce: rdma_rxe is not installed; trying linux-modules-extra-$(uname -r)"
      $sudo apt-get install -y -qq "linux-modules-extra-$(uname -r)" >/dev/null 2>&1 \
        || echo "softroce: no linux-modules-extra-$(uname -r) to install"
    fi
    if ! $sudo modprobe rdma_rxe 2>/dev/null; then
      echo "softroce: this kernel ($(uname -r)) ships no rdma_rxe: building it out of tree (scripts/rxe-module.sh)"
      bash "$(dirname "$0")/rxe-module.sh" \
        || die "rdma_rxe could not be built or loaded for $(uname -r) (scripts/rxe-module.sh said why above)"
    fi
  fi
fi
[ -d /sys/module/rdma_rxe ] || die "rdma_rxe is not loaded although modprobe succeeded (dmesg says why)"

if [ "$exclusive" = 1 ]; then
  # The RDMA drivers of NICs a cloud VM may have. modprobe -r of one that is absent is no error.
  for module in mlx5_ib mana_ib mlx4_ib irdma bnxt_re efa erdma qedr vmw_pvrdma hns_roce_hw_v2 siw; do
    if [ -d "/sys/module/$module" ]; then
      if $sudo modprobe -r "$module"; then
        echo "softroce: unloaded $module"
      else
        echo "softroce: could not unload $module (in use?)" >&2
      fi
    fi
  done
fi

if rdma link show 2>/dev/null | grep -q "link $name/"; then
  echo "softroce: $name exists already"
else
  $sudo rdma link add "$name" type rxe netdev "$iface" || die "'rdma link add $name type rxe netdev $iface' failed"
  echo "softroce: created $name on $iface"
fi
rdma link show "$name/1" || true

if [ "$exclusive" = 1 ]; then
  others=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 ! -name "$name" -printf '%f ' 2>/dev/null || true)
  [ -z "$others" ] || die "--exclusive: devices besides $name are left: $others(rdma link lists them; their driver would not unload)"
  echo "softroce: $name is the only RDMA device"
fi
if command -v ibv_devinfo >/dev/null; then
  ibv_devinfo -d "$name" | grep -E "hca_id|state|active_mtu|link_layer" || die "ibv_devinfo does not see $name: is rdma-core installed (scripts/verbs-deps.sh)?"
fi

# The GID perftest's -x and the verbs runtime's RDMA_GID_INDEX should both use: the first RoCE v2
# GID that maps an IPv4 address (the runtime's own default is the first routable RoCE v2 GID).
port="/sys/class/infiniband/$name/ports/1"
gid_index=""
for i in $(find "$port/gid_attrs/types" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -n); do
  [ "$(cat "$port/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
  case "$(cat "$port/gids/$i" 2>/dev/null)" in
    0000:0000:0000:0000:0000:ffff:*) gid_index=$i; break ;;
  esac
done
[ -n "$gid_index" ] || die "$name has no RoCE v2 GID for an IPv4 address (is $iface's IPv4 address up? $port/gids lists them)"
echo "softroce: RoCE v2 IPv4 GID of $name: index $gid_index ($(cat "$port/gids/$gid_index"))"
if [ -n "${GITHUB_ENV:-}" ]; then
  printf 'RDMA_DEVICE=%s\nRDMA_GID_INDEX=%s\n' "$name" "$gid_index" >>"$GITHUB_ENV"
fi
echo "softroce: export RDMA_DEVICE=$name RDMA_GID_INDEX=$gid_index"
