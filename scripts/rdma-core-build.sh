#!/usr/bin/env bash
# Builds rdma-core (libibverbs and its providers, rxe among them) in place, at a pinned tag, and
# points later commands at it (issue 48 part 4).
#
# Why: the distributions' rdma-core lags the rxe provider's fixes that the verbs runtime depends
# on. sideway polls completions through the extended CQ API (ibv_start_poll / ibv_next_poll /
# ibv_end_poll), and rxe's provider got that wrong until rdma-core 55 ("rxe: fix completion
# queue consumer index overrun": a poll after an empty one skipped a completion, which is how
# a run loses completions) and 61 ("rxe: Fix double unlock in cq_ex polling"); 64 fixes the
# length of scatter-gather and inline-list work requests. Ubuntu 24.04 ships rdma-core 50 and
# 22.04 ships 39: both have all three bugs.
#
#   scripts/rdma-core-build.sh [--tag TAG] [--dir DIR] [--src DIR] [--deps] [--dry-run]
#
#   --tag TAG   the rdma-core release tag to clone (default v64.0)
#   --dir DIR   where the checkout goes (default ${RUNNER_TEMP:-/tmp}/rdma-core-TAG)
#   --src DIR   build an existing rdma-core checkout instead of cloning one (no network)
#   --deps      first install the build dependencies with apt-get (root or sudo)
#   --dry-run   print what would be done, change nothing
#
# rdma-core's own build.sh configures with -DIN_PLACE=1: the libraries land in DIR/build/lib and
# libibverbs is compiled to read its provider list from DIR/build/etc/libibverbs.d and load the
# providers from DIR/build/lib, not from /usr. So one variable moves a program onto this build:
# LD_LIBRARY_PATH=DIR/build/lib (the verbs crate dlopens libibverbs.so.1 by that name, and
# perftest links it). Under GitHub Actions ($GITHUB_ENV set) the script appends LD_LIBRARY_PATH
# and RDMA_CORE_DIR to $GITHUB_ENV and DIR/build/bin to $GITHUB_PATH, so every later step uses
# it; elsewhere it prints the export lines on stdout (eval "$(scripts/rdma-core-build.sh ...)").
# Note that sudo drops LD_LIBRARY_PATH: run the programs that must use this build without sudo.
# And the distribution's own rdma-core tools (/usr/bin/ibv_devinfo, ibv_devices) link libibverbs'
# private ABI of their version, so against this build they fail ("version `IBVERBS_PRIVATE_34'
# not found"): use this build's, in DIR/build/bin, which is why it goes first on PATH. perftest
# and the verbs crate use only the public ABI and are fine.
set -euo pipefail

tag=v64.0
dir=""
src=""
deps=0
dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --src) src="$2"; shift 2 ;;
    --deps) deps=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "rdma-core-build: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done

say() { echo "rdma-core-build: $*" >&2; }
die() { say "$*"; exit 2; }
run() {
  if [ "$dry" = 1 ]; then say "would run: $*"; else say "+ $*"; "$@" >&2; fi
}

if [ -n "$src" ]; then
  if [ ! -f "$src/build.sh" ] || [ ! -d "$src/libibverbs" ]; then
    die "$src is not an rdma-core checkout (no build.sh or libibverbs/)"
  fi
  dir=$(cd "$src" && pwd)
else
  dir="${dir:-${RUNNER_TEMP:-/tmp}/rdma-core-$tag}"
fi

# Ubuntu's names for what rdma-core's README lists for Debian, less what the man pages and pyverbs
# need (both are turned off below).
build_deps=(build-essential cmake ninja-build pkg-config libudev-dev libnl-3-dev libnl-route-3-dev)
if [ "$deps" = 1 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  run $sudo apt-get install -y -qq --no-install-recommends "${build_deps[@]}"
fi
for tool in cmake gcc pkg-config; do
  command -v "$tool" >/dev/null || [ "$dry" = 1 ] \
    || die "$tool is missing: run with --deps, or apt-get install ${build_deps[*]}"
done

if [ -z "$src" ]; then
  if [ -f "$dir/build.sh" ]; then
    say "$dir exists already; building it as it is ($(git -C "$dir" describe --tags 2>/dev/null || echo 'no tag'))"
  else
    command -v git >/dev/null || [ "$dry" = 1 ] || die "git is missing"
    run git clone --quiet --depth 1 --branch "$tag" https://github.com/linux-rdma/rdma-core.git "$dir"
  fi
fi

# The man pages need pandoc and the Python bindings cython: neither is used here.
export EXTRA_CMAKE_FLAGS="${EXTRA_CMAKE_FLAGS:--DNO_MAN_PAGES=1 -DNO_PYVERBS=1}"
say "EXTRA_CMAKE_FLAGS=$EXTRA_CMAKE_FLAGS"
run bash "$dir/build.sh"

lib="$dir/build/lib"
if [ "$dry" = 0 ]; then
  [ -e "$lib/libibverbs.so.1" ] || die "the build has no $lib/libibverbs.so.1"
  ls "$lib"/librxe-rdmav*.so >/dev/null 2>&1 || die "the build has no rxe provider ($lib/librxe-rdmav*.so)"
  [ -e "$dir/build/etc/libibverbs.d/rxe.driver" ] || die "the build has no $dir/build/etc/libibverbs.d/rxe.driver"
  # In place means the provider directory is compiled into libibverbs: check that it is this one.
  grep -aq -- "$lib" "$lib/libibverbs.so.1" \
    || die "$lib/libibverbs.so.1 does not name $lib as its provider directory: was it configured with -DIN_PLACE=1?"
  say "built: $(readlink -f "$lib/libibverbs.so.1"), providers: $(cd "$lib" && echo lib*-rdmav*.so | wc -w) in $lib"
fi

if [ -n "${GITHUB_ENV:-}" ]; then
  run_env() { if [ "$dry" = 1 ]; then say "would append to $2: $1"; else echo "$1" >>"$2"; fi; }
  run_env "LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$GITHUB_ENV"
  run_env "RDMA_CORE_DIR=$dir" "$GITHUB_ENV"
  run_env "$dir/build/bin" "${GITHUB_PATH:-/dev/null}"
  say "later steps use $lib (LD_LIBRARY_PATH in \$GITHUB_ENV) and $dir/build/bin (\$GITHUB_PATH)"
else
  echo "export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
  echo "export RDMA_CORE_DIR=$dir"
  echo "export PATH=$dir/build/bin:\$PATH"
fi
