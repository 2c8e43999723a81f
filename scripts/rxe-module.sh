#!/usr/bin/env bash
# Builds the SoftRoCE kernel module (rdma_rxe) out of tree for the running kernel, installs and
# loads it (issue 48 part 4). For kernels that ship ib_core but not rdma_rxe: GitHub's hosted
# Ubuntu runners (the azure flavour) have no rdma_rxe, in linux-modules-extra or anywhere else.
#
#   scripts/rxe-module.sh [--dry-run] [--tag vX.Y] [--workdir DIR]
#
#   --dry-run     check everything, print each command it would run, change nothing
#   --tag vX.Y    the upstream kernel tag whose drivers/infiniband/sw/rxe to build
#                 (default: the running kernel's MAJOR.MINOR, e.g. 6.8.0-1059-azure -> v6.8)
#   --workdir DIR where the source goes (default ${RUNNER_TEMP:-/tmp}/rxe-module)
#   --kernel KVER plan for this kernel release instead of the running one (with --dry-run: to
#                 see what a runner's kernel would get; modprobe loads only into the running one)
#
# How: only drivers/infiniband/sw/rxe is taken from the upstream tree (a sparse, blob-less,
# depth-1 git clone at the tag), and built as an external module against the running kernel's
# headers (/lib/modules/KVER/build, package linux-headers-KVER) with CONFIG_RDMA_RXE=m given on
# make's command line, so the driver's own Makefile builds rdma_rxe.ko although the kernel was
# configured without it. The module goes to /lib/modules/KVER/updates/, then depmod and modprobe.
# Upstream source is not the distribution kernel's: the closer the kernel is to its upstream
# MAJOR.MINOR, the safer. (rust-ibverbs, which builds rxe the same way in its CI, found the
# module built for ubuntu-22.04's 6.8 kernel reliable, and the one for a 6.17 kernel dropping
# completions; the workflow runs on ubuntu-22.04 for that reason.)
#
# What cannot work, it says before building: a kernel without loadable modules
# (CONFIG_MODULES), or without InfiniBand (CONFIG_INFINIBAND, i.e. ib_core) and its user verbs
# (CONFIG_INFINIBAND_USER_ACCESS, ib_uverbs), which rdma_rxe links against and no out-of-tree
# build can add. Exit status: 0 loaded, 2 cannot be done here (the message says why).
set -euo pipefail

dry=0
tag=""
kver=$(uname -r)
workdir="${RUNNER_TEMP:-/tmp}/rxe-module"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --tag) tag="$2"; shift 2 ;;
    --workdir) workdir="$2"; shift 2 ;;
    --kernel) kver="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "rxe-module: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

say() { echo "rxe-module: $*" >&2; }
die() { say "$*"; exit 2; }
# A check that fails: a real run stops here; a dry run says so and goes on, to show the rest.
stopped=0
stop() {
  if [ "$dry" = 1 ]; then say "STOP (a real run ends here, exit 2): $*"; stopped=1; else die "$*"; fi
}
run() {
  if [ "$dry" = 1 ]; then say "would run: $*"; else say "+ $*"; "$@" >&2; fi
}
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "needs root (or sudo) to install and load a module"
  sudo="sudo"
fi

modules="/lib/modules/$kver"
if [ "$kver" != "$(uname -r)" ] && [ "$dry" = 0 ]; then
  die "--kernel $kver is not the running kernel ($(uname -r)): only a --dry-run can plan for another one"
fi
say "kernel $kver"

if [ -d /sys/module/rdma_rxe ]; then
  say "rdma_rxe is loaded already"
  exit 0
fi
if command -v modinfo >/dev/null && modinfo rdma_rxe >/dev/null 2>&1; then
  say "this kernel has rdma_rxe ($(modinfo -n rdma_rxe)): nothing to build"
  run $sudo modprobe rdma_rxe
  exit 0
fi

# The kernel's configuration: the installed one, the headers' copy, or the running kernel's own.
config=""
for c in "/boot/config-$kver" "$modules/build/.config"; do
  if [ -r "$c" ]; then config=$(cat "$c"); say "configuration: $c"; break; fi
done
if [ -z "$config" ] && [ -r /proc/config.gz ] && [ "$kver" = "$(uname -r)" ]; then
  config=$(zcat /proc/config.gz); say "configuration: /proc/config.gz"
fi
[ -n "$config" ] || say "no configuration found (/boot/config-$kver, $modules/build/.config, /proc/config.gz): the build below will tell"
option() { # the value of CONFIG_$1 (y, m, a string) or "" when unset
  printf '%s\n' "$config" | sed -n "s/^CONFIG_$1=//p" | head -1
}
if [ -n "$config" ]; then
  [ "$(option MODULES)" = y ] \
    || stop "kernel $kver was built without loadable modules (CONFIG_MODULES is off): no rdma_rxe, built here or anywhere, can be loaded into it"
  case "$(option INFINIBAND)" in
    y|m) ;;
    *) stop "kernel $kver was built without InfiniBand (CONFIG_INFINIBAND is off, so there is no ib_core): rdma_rxe links against ib_core, which no out-of-tree build of rdma_rxe can add. SoftRoCE cannot run on this kernel" ;;
  esac
  case "$(option INFINIBAND_USER_ACCESS)" in
    y|m) ;;
    *) stop "kernel $kver has no user verbs (CONFIG_INFINIBAND_USER_ACCESS is off, so there is no ib_uverbs): libibverbs could not reach an rxe device. SoftRoCE cannot run on this kernel" ;;
  esac
  case "$(option NET_UDP_TUNNEL)" in
    y|m) ;;
    *) say "warning: CONFIG_NET_UDP_TUNNEL is off; rdma_rxe needs its udp_tunnel symbols and will likely not load" ;;
  esac
fi

# The headers to build against; the compiler the kernel was built with, when it is a versioned gcc.
cc=()
if [ ! -d "$modules/build" ]; then
  command -v apt-get >/dev/null \
    || stop "no headers for $kver ($modules/build is missing) and no apt-get to install linux-headers-$kver"
  if [ "$dry" = 1 ] && ! apt-cache show "linux-headers-$kver" >/dev/null 2>&1; then
    stop "no headers for $kver ($modules/build is missing) and no package linux-headers-$kver in apt's lists: the kernel source this build needs is not to be had here"
  fi
  run $sudo apt-get install -y -qq --no-install-recommends "linux-headers-$kver" build-essential libelf-dev dwarves git
  [ "$dry" = 1 ] || [ -d "$modules/build" ] \
    || die "linux-headers-$kver installed no $modules/build: this kernel's headers are not packaged"
fi
gcc_major=$(option CC_VERSION_TEXT | sed -n 's/.*gcc[^ ]* ([^)]*) \([0-9]*\)\..*/\1/p')
if [ -n "$gcc_major" ] && [ "$(gcc -dumpversion 2>/dev/null | cut -d. -f1)" != "$gcc_major" ]; then
  if ! command -v "gcc-$gcc_major" >/dev/null; then
    run $sudo apt-get install -y -qq --no-install-recommends "gcc-$gcc_major"
  fi
  cc=("CC=gcc-$gcc_major")
  say "the kernel was built with gcc $gcc_major: building with gcc-$gcc_major"
fi

if [ -z "$tag" ]; then
  tag=$(printf '%s\n' "$kver" | sed -n 's/^\([0-9]*\)\.\([0-9]*\).*/v\1.\2/p')
  [ -n "$tag" ] || die "cannot read MAJOR.MINOR from the kernel release $kver: name the tag with --tag"
fi
say "upstream source: drivers/infiniband/sw/rxe at $tag"

src="$workdir/linux-$tag"
rxe="$src/drivers/infiniband/sw/rxe"
if [ -f "$rxe/Makefile" ]; then
  say "$rxe exists already"
else
  command -v git >/dev/null || [ "$dry" = 1 ] || die "git is missing"
  run mkdir -p "$workdir"
  run git clone --quiet --depth 1 --filter=blob:none --sparse --branch "$tag" \
    https://github.com/torvalds/linux.git "$src"
  run git -C "$src" sparse-checkout set drivers/infiniband/sw/rxe
fi

run make -C "$modules/build" M="$rxe" CONFIG_RDMA_RXE=m "${cc[@]}" -j "$(nproc)" modules
if [ "$dry" = 0 ]; then
  [ -f "$rxe/rdma_rxe.ko" ] || die "the build made no $rxe/rdma_rxe.ko"
  modinfo "$rxe/rdma_rxe.ko" | grep -E '^(vermagic|depends):' >&2
fi
run $sudo install -D -m 0644 "$rxe/rdma_rxe.ko" "$modules/updates/rdma_rxe.ko"
run $sudo depmod -a "$kver"
run $sudo modprobe rdma_rxe
if [ "$dry" = 0 ]; then
  [ -d /sys/module/rdma_rxe ] || die "modprobe rdma_rxe returned but /sys/module/rdma_rxe is absent (dmesg says why)"
  say "rdma_rxe loaded from $modules/updates/rdma_rxe.ko"
elif [ "$stopped" = 1 ]; then
  die "dry run: nothing was changed; a real run would have stopped at the STOP above"
else
  say "dry run: nothing was changed"
fi
