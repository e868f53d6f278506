#!/usr/bin/env bash
# Installs every Debian package weft needs to build, test and benchmark; idempotent.
# apt-get update runs only when something is missing.
set -euo pipefail

build_pkgs=(meson ninja-build pkg-config gcc libfuse3-dev fuse3 liblmdb-dev libisal-dev libsodium-dev libssl-dev libsystemd-dev scdoc
            libjansson-dev libmicrohttpd-dev)
test_pkgs=(clang jq libclang-rt-14-dev attr libcap2-bin fio psmisc iproute2 lmdb-utils
           debhelper dpkg-dev fakeroot man-db systemd
           dstat prometheus python3 gnuplot-nox linux-perf)
# The kernel source tarball is only for the tar/diff test and the seed-004 benchmark.
extra_pkgs=(linux-source-6.1)

want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  test)  want+=("${test_pkgs[@]}") ;;
  all)   want+=("${test_pkgs[@]}" "${extra_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test|all]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
