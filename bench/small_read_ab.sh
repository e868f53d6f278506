#!/usr/bin/env bash
# Same cluster; each round a fresh mount with OPT=on, then one with OPT=off, cold; OPT is
# $OPT, open_prefetch unless set (e.g. OPT=local_open).
#   [OPT=NAME] bash bench/small_read_ab.sh WEFT N ROUNDS SIZES...
# Reads cold (drop_caches) with find DIR -type f -print0 | xargs -0 cat, as small_read.sh;
# alternating removes most of what a shared machine adds between two runs of small_read.sh.
# Run as root, ideally in its own network namespace. Prints the seconds of each read.
set -euo pipefail
WEFT=$(readlink -f "$1"); N=$2; R=$3; shift 3
OPT=${OPT:-open_prefetch}
W=$(mktemp -d /var/tmp/weft-smallab.XXXXXX)
trap 'umount "$W/m" 2>/dev/null || true; "$WEFT" down --dir "$W/s" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
now() { date +%s.%N; }
rd() { local t0 t1; t0=$(now); find "$1" -type f -print0 | xargs -0 cat >/dev/null; t1=$(now); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'; }
"$WEFT" up --dir "$W/s" --mount "$W/s/mnt" --stores 4 --replicas 2 >/dev/null
mkdir -p "$W/m"
one() { # one on|off SIZE
	"$WEFT" mount "$(cat "$W/s/meta.addr")" "$W/m" --key "$W/s/cluster.key" -o no_root_squash,$OPT=$1 --log "$W/m.log"
	echo 3 >/proc/sys/vm/drop_caches
	rd "$W/m/z$2"
	umount "$W/m"; sleep 0.5
}
for size in "$@"; do
	head -c "$size" /dev/urandom >"$W/payload"
	for i in $(seq 0 19); do mkdir -p "$W/s/mnt/z$size/d$i"; done
	for i in $(seq 0 $((N - 1))); do cp "$W/payload" "$W/s/mnt/z$size/d$((i % 20))/f$i"; done
	sync; sleep 1
	on="" off=""
	for r in $(seq "$R"); do on="$on $(one on "$size")"; off="$off $(one off "$size")"; done
	echo "size $size  on:$on  off:$off"
done
