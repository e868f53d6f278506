#!/usr/bin/env bash
# Reading a hole: a 1 GiB file with 4 KiB of data at its start and in each of its last
# 8 MiB (the rest a hole: inside every stripe object's size), read
# with dd bs=1M after drop_caches, on a fresh `weft up` cluster (4 stores) with the
# directory at replicas R, and on local ext4 (the same file under /tmp, or DIR) in the
# same run, and the first 1 GiB of libfuse's example null file system (high-level API,
# reads return zeros; read_ahead_kb raised to 4096 like weft's mount), the FUSE ceiling
# for the same reads. Prints the times and ratios; checks the bytes read (data at both
# ends, zeros between) through a checksum of the whole file against the local one.
# Usage (as root): bash bench/sparse_read.sh [WEFT] [RUNS] [REPLICAS] [DIR]
set -euo pipefail
WEFT=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/weft}
RUNS=${2:-3}
R=${3:-1}
DIR=${4:-/tmp}
S=$(mktemp -d /tmp/weft-sparse.XXXXXX)
L=$(mktemp -d "$DIR/weft-sparse-local.XXXXXX")
NF= NPID=
cleanup() {
	set +e
	[ -n "$NF" ] && umount "$NF" 2>/dev/null
	[ -n "$NPID" ] && kill "$NPID" 2>/dev/null && wait "$NPID" 2>/dev/null
	"$WEFT" down --dir "$S" >/dev/null 2>&1
	rm -rf "$S" "$L"
}
trap cleanup EXIT
"$WEFT" up --dir "$S" --stores 4 >/dev/null
mkdir "$S/mnt/sp"
"$WEFT" setstripe "$S/mnt/sp" --replicas "$R" --key "$S/cluster.key" >/dev/null

mk() { # mk FILE: 4 KiB of data at 0 and at the end of each of the last 8 MiB, the rest
	# a hole; so every stripe object (up to 8 stripes of 1 MiB) spans the whole hole
	head -c 4096 /dev/urandom >"$L/data.head"
	dd if="$L/data.head" of="$1" bs=4096 count=1 conv=notrunc status=none
	for m in $(seq 1 8); do
		dd if="$L/data.head" of="$1" bs=4096 seek=$(((1 << 30) / 4096 - (m - 1) * 256 - 1)) \
			count=1 conv=notrunc status=none
	done
}
mk "$L/hole"
cp --sparse=always "$L/hole" "$S/mnt/sp/hole"
want=$(sha256sum <"$L/hole" | cut -d' ' -f1)
read_s() { # read_s FILE: seconds to read it with dd bs=1M, cold
	sync
	echo 3 >/proc/sys/vm/drop_caches
	local t0 t1
	t0=$(date +%s.%N)
	dd if="$1" of=/dev/null bs=1M status=none
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
fstype=$(stat -f -c %T "$L")
# the null file system: a file mount point whose reads are zeros (4 GiB long)
NULLC=/usr/share/doc/libfuse3-dev/examples/null.c
if [ -f "$NULLC" ] && cc -O2 -o "$L/null" "$NULLC" $(pkg-config --cflags --libs fuse3) 2>/dev/null; then
	NF=$L/nullfile
	touch "$NF"
	"$L/null" -f "$NF" &
	NPID=$!
	for _ in $(seq 50); do mountpoint -q "$NF" && break; sleep 0.1; done
	echo 4096 >"/sys/class/bdi/$(mountpoint -d "$NF")/read_ahead_kb"
fi
read_null() { # seconds to read the null file system's first 1 GiB, cold
	echo 3 >/proc/sys/vm/drop_caches
	local t0 t1
	t0=$(date +%s.%N)
	dd if="$NF" of=/dev/null bs=1M count=1024 status=none
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
# bytes the stores read from their disks (as their heartbeats last reported them)
store_read() {
	"$WEFT" status --json --dir "$S" |
		python3 -c 'import json,sys; print(sum(t["read_bytes"] for t in json.load(sys.stdin)["targets"]))'
}
sleep 2
rb0=$(store_read)
for r in $(seq "$RUNS"); do
	lt=$(read_s "$L/hole")
	wt=$(read_s "$S/mnt/sp/hole")
	printf 'run %s: 1 GiB hole, replicas %s: weft %.3f s, local %s %.3f s, weft/local %.2f' \
		"$r" "$R" "$wt" "$fstype" "$lt" "$(echo "$wt / $lt" | bc -l)"
	if [ -n "$NF" ]; then
		nt=$(read_null)
		printf ', null FUSE %.3f s, weft/null %.2f' "$nt" "$(echo "$wt / $nt" | bc -l)"
	fi
	echo
done
sleep 2
rb1=$(store_read)
echo "the stores read $(( (rb1 - rb0) / RUNS )) bytes per 1 GiB read (their heartbeats' counters)"
got=$(sha256sum <"$S/mnt/sp/hole" | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "weft read different bytes than were written" >&2; exit 1; }
echo "bytes checked: the weft copy reads the same as the local file"
