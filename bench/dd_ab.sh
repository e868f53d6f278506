#!/usr/bin/env bash
# A quick streaming check of one weft binary: weft up (4 stores, loopback), one dd of
# 2 GiB with conv=fsync into the mount, caches dropped, dd of it back; prints MB/s.
# Also prints the CPU time (user + system) the cluster's processes used over the run.
# Used to compare two builds (before/after a change), alternating runs:
#   bash bench/dd_ab.sh WEFT_BINARY LABEL [REPLICAS (default 2)]
# Needs root (drop_caches, mount). State in a fresh directory under /tmp, removed after.
set -euo pipefail
W=$1 L=$2 R=${3:-2}
S=$(mktemp -d /tmp/weft-ddab.XXXXXX)
cleanup() { "$W" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"; }
trap cleanup EXIT
"$W" up --dir "$S" --stores 4 --replicas "$R" >/dev/null
M=$S/mnt
t0=$(date +%s.%N); dd if=/dev/zero of="$M/f" bs=1M count=2048 conv=fsync status=none; t1=$(date +%s.%N)
sync; echo 3 >/proc/sys/vm/drop_caches
t2=$(date +%s.%N); dd if="$M/f" of=/dev/null bs=1M status=none; t3=$(date +%s.%N)
# CPU the cluster's processes (meta, stores, mount) used so far, user + system, in seconds
cpu=0
hz=$(getconf CLK_TCK)
for p in /proc/[0-9]*; do
	grep -qF -- "$S" "$p/cmdline" 2>/dev/null || continue
	read -r -a st <"$p/stat" 2>/dev/null || continue
	cpu=$((cpu + st[13] + st[14]))
done
awk -v l="$L" -v r="$R" -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v cpu="$cpu" -v hz="$hz" \
	'BEGIN { printf "%s r%s write %.0f MB/s read %.0f MB/s cpu %.1f s\n", l, r, 2048*1.048576/(b-a), 2048*1.048576/(d-c), cpu/hz }'
