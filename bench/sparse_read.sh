#!/usr/bin/env bash
# Reading a hole: a 1 GiB file with 4 KiB of data at each end (the rest a hole), read
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
trap '"$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S" "$L"' EXIT
"$WEFT" up --dir "$S" --stores 4 >/dev/null
mkdir "$S/mnt/sp"
"$WEFT" setstripe "$S/mnt/sp" --replicas "$R" --key "$S/cluster.key" >/dev/null

mk() { # mk FILE: 4 KiB of data at 0 and at 1 GiB - 4 KiB, the rest a hole
	head -c 4096 /dev/urandom >"$L/data.head" 2>/dev/null || true
	dd if="$L/data.head" of="$1" bs=4096 count=1 conv=notrunc status=none
	dd if="$L/data.head" of="$1" bs=4096 seek=$(((1 << 30) / 4096 - 1)) count=1 conv=notrunc status=none
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
NF=
if [ -f "$NULLC" ] && cc -O2 -o "$L/null" "$NULLC" $(pkg-config --cflags --libs fuse3) 2>/dev/null; then
	NF=$L/nullfile
	touch "$NF"
	"$L/null" -f "$NF" &
	NPID=$!
	trap 'umount "$NF" 2>/dev/null; kill $NPID 2>/dev/null; "$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S" "$L"' EXIT
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
got=$(sha256sum <"$S/mnt/sp/hole" | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "weft read different bytes than were written" >&2; exit 1; }
echo "bytes checked: the weft copy reads the same as the local file"
