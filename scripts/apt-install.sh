#!/usr/bin/env bash
# `apt_install TAG PACKAGE...`: installs the Debian/Ubuntu packages not installed yet, as root or
# with sudo, idempotently, and says what it did (prefixed with TAG). Sourced by the *-deps.sh
# scripts.
apt_install() {
  local tag=$1
  shift
  local missing=()
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "$tag: everything is installed"
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "$tag: need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
    sudo="sudo"
  fi
  echo "$tag: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "$tag: installed ${missing[*]}"
}
