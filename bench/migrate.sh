#!/usr/bin/env bash
# weft migrate throughput (issue 16): a 512 MiB file restriped three times on a fresh
# `weft up` cluster (4 stores, replicas 2), the file idle:
#   all 4 chains x 1M x 2 copies -> 2 chains x 4M x 2 -> 2 x 4M x 1 -> 4 x 1M x 3
# MB/s = file size / wall time of `weft migrate` (BEGIN with its recalls, the extent,
# the copy: read with the old layout, write the new, read back and compare; OBJ_FSYNC;
# SWITCH). The sha256 of the file is checked after each.
#   bash bench/migrate.sh [WEFT] [MIB]
# Run as root (a FUSE mount).
set -euo pipefail
WEFT=$(readlink -f "${1:-build/weft}")
MIB=${2:-512}
W=$(mktemp -d /var/tmp/weft-migrate.XXXXXX)
S=$W/s
trap '"$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
"$WEFT" up --dir "$S" --mount "$S/mnt" --stores 4 --replicas 2 >/dev/null
F=$S/mnt/big
head -c $((MIB << 20)) /dev/urandom >"$F"
want=$(sha256sum "$F" | cut -d' ' -f1)
run() { # run ARGS...: one migrate, one line of results
	local t0 t1
	t0=$(date +%s.%N)
	"$WEFT" migrate --dir "$S" -q "$@" "$F"
	t1=$(date +%s.%N)
	[ "$(sha256sum "$F" | cut -d' ' -f1)" = "$want" ] || { echo "sha256 changed" >&2; exit 1; }
	echo "$* $t0 $t1" | awk -v mib="$MIB" '{n = NF; s = $n - $(n-1); $n = ""; $(n-1) = "";
		printf "%-45s %6.2f s %6.0f MB/s\n", $0, s, mib * 1048576 / 1e6 / s}'
}
echo "# $MIB MiB file, 4 stores, $(nproc) cores, $(date -u +%F)"
run --stripe-count 2 --stripe-unit 4M
run --replicas 1
run --stripe-count 4 --stripe-unit 1M --replicas 3
