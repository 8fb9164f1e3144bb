#!/usr/bin/env bash
# Installs the system packages polyc needs to build and test, when they are missing.
# Usage: scripts/setup.sh [extra Debian packages...]
# isl is built from source by the isl-rs crate (autotools, libtool); Z3 comes from Debian
# (libz3-dev), and the z3 crate generates its bindings with bindgen, which needs libclang-dev.
set -euo pipefail

packages=(autoconf automake libtool make gcc g++ pkg-config libgmp-dev libz3-dev libclang-dev "$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo is not installed; install a Rust toolchain (rustup) first" >&2
  exit 1
fi
