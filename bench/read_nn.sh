#!/usr/bin/env bash
# N-to-N sequential read (issue 17): N fio jobs each read their own file in 8 MiB reads
# (psync), after drop_caches, on a fresh `weft up` cluster (4 stores, a replicas 1
# directory) and on the null FUSE file system (bench/nullfuse.c, same read-ahead).
# 2 GiB in all at every N (files of 2048/N MiB). Prints MB/s for each and the ratio.
# Usage (as root): bash bench/read_nn.sh [BUILD] [RUNS] [N...]
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
RUNS=${2:-1}
shift 2 2>/dev/null || true
NS=${*:-1 4 16}
WEFT=$BUILD/weft
S=$(mktemp -d /tmp/weft-nn.XXXXXX)
cleanup() {
	umount "$S/null" 2>/dev/null || true
	"$WEFT" down --dir "$S" >/dev/null 2>&1 || true
	rm -rf "$S"
}
trap cleanup EXIT
"$WEFT" up --dir "$S" --stores 4 >/dev/null
M=$S/mnt
mkdir "$M/r1" "$S/null"
"$WEFT" setstripe "$M/r1" --replicas 1 --dir "$S" >/dev/null
fiorun() { # fiorun DIR N MIB: aggregate read MB/s
	local args=() i
	for i in $(seq 0 $(($2 - 1))); do args+=(--name=j$i --filename="$1/$i"); done
	sync; echo 3 >/proc/sys/vm/drop_caches
	fio --rw=read --bs=8M --size="$3M" --ioengine=psync --output-format=terse \
		--terse-version=3 --group_reporting "${args[@]}" 2>/dev/null |
		awk -F';' '{printf "%.0f\n", $7 * 1024 / 1e6}'
}
echo "| run | N | weft r1 MB/s | null FUSE MB/s | ratio |"
echo "| --- | --- | --- | --- | --- |"
for n in $NS; do
	mib=$((2048 / n))
	mkdir "$M/r1/n$n"
	for i in $(seq 0 $((n - 1))); do
		dd if=/dev/zero of="$M/r1/n$n/$i" bs=1M count=$mib status=none
	done
	sync
	"$BUILD/bench/nullfuse" "$S/null" --size $((mib << 20)) --files "$n"
	for r in $(seq "$RUNS"); do
		w=$(fiorun "$M/r1/n$n" "$n" "$mib")
		z=$(fiorun "$S/null" "$n" "$mib")
		awk -v r="$r" -v n="$n" -v w="$w" -v z="$z" 'BEGIN { printf "| %s | %s | %d | %d | %.2f |\n", r, n, w, z, w / z }'
	done
	umount "$S/null"
	rm -rf "$M/r1/n$n"
done
