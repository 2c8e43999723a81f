#!/usr/bin/env bash
# What the machine's RDMA stack looks like, for a failed SoftRoCE run (issue 48 part 4): the
# kernel, its RDMA modules, the devices (rdma link, ibv_devices, ibv_devinfo -v), which
# libibverbs and providers a program loads, the locked-memory limit, and the kernel log's tail.
#
#   scripts/rdma-diagnose.sh [OUTDIR]
#
# Prints everything; with OUTDIR also writes it to OUTDIR/rdma-diagnose.txt, and each device's
# `ibv_devinfo -v` to OUTDIR/ibv_devinfo-v-DEVICE.txt (the capabilities a run was made with).
# Every command may fail (no device, no rdma tool, no dmesg rights): it says so and goes on, and
# the script always exits 0, so that it can follow any failure.
set -uo pipefail

out="${1:-}"
if [ -n "$out" ]; then
  mkdir -p "$out"
  exec > >(tee "$out/rdma-diagnose.txt") 2>&1
fi
sudo=""
[ "$(id -u)" -eq 0 ] || ! command -v sudo >/dev/null || sudo="sudo -n"

section() {
  local title="$1"; shift
  echo "== $title"
  if ! command -v "$1" >/dev/null 2>&1 && [ "$1" != "$sudo" ]; then
    echo "($1 is not installed)"; echo; return 0
  fi
  "$@" 2>&1
  local rc=$?
  [ "$rc" = 0 ] || echo "(exit status $rc)"
  echo
}

section "uname -a" uname -a
section "ulimit -l (locked memory, KiB)" bash -c 'ulimit -l; ulimit -Hl'
section "RDMA modules (/sys/module)" bash -c 'ls -d /sys/module/{ib_core,ib_uverbs,rdma_rxe,siw,mlx5_ib,mana_ib,rdma_ucm} 2>/dev/null || echo "none of ib_core, ib_uverbs, rdma_rxe, siw, mlx5_ib, mana_ib, rdma_ucm"'
section "/sys/class/infiniband" ls -l /sys/class/infiniband
section "rdma link" rdma link
section "rdma dev" rdma dev
section "rdma resource" rdma resource
section "ibv_devices" ibv_devices
section "ibv_devinfo -v" ibv_devinfo -v
# shellcheck disable=SC2016 # expanded by the inner bash
section "LD_LIBRARY_PATH and the libibverbs a program loads" bash -c \
  'echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; ldd "$(command -v ibv_devinfo)" | grep -E "ibverbs|rdmacm" || true'
drivers=(/etc/libibverbs.d/rxe.driver)
[ -z "${RDMA_CORE_DIR:-}" ] || drivers+=("$RDMA_CORE_DIR/build/etc/libibverbs.d/rxe.driver")
section "rxe.driver files (the in-place build reads only its own; RDMA_CORE_DIR=${RDMA_CORE_DIR:-})" ls -l "${drivers[@]}"
section "ip -br addr" ip -br addr
section "dmesg | tail -200" bash -c "$sudo dmesg | tail -200"

if [ -n "$out" ] && [ -d /sys/class/infiniband ] && command -v ibv_devinfo >/dev/null; then
  for dev in /sys/class/infiniband/*; do
    [ -e "$dev" ] || continue
    ibv_devinfo -v -d "$(basename "$dev")" >"$out/ibv_devinfo-v-$(basename "$dev").txt" 2>&1 || true
  done
fi
exit 0
