#!/usr/bin/env bash
# Quick start: install what is missing, build, and start a weft cluster on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build
if build/weft --help | grep -q '^  up '; then
	exec build/weft up "$@"
fi
echo "built build/weft; 'weft up' is not available yet in this version"
