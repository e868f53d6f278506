#!/usr/bin/env bash
# Random reads (issue 17): fio randread, 4 KiB and 1 MiB blocks, iodepth 16, libaio, with
# direct=0 and direct=1, for SECONDS each, on a 1 GiB file: on a fresh `weft up` cluster
# (4 stores, replicas 1 and replicas 2 directories) and on the local file system
# (LOCAL, default /var/tmp), in one run. Prints IOPS and p99 completion latency, and
# weft's IOPS as a ratio of the local file system's. Caches are dropped before each row.
# Usage (as root, in a network namespace of your own): bash bench/read_rand.sh [BUILD] [SECONDS]
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
SECS=${2:-10}
WEFT=$BUILD/weft
S=$(mktemp -d /tmp/weft-rand.XXXXXX)
L=$(mktemp -d "${LOCAL:-/var/tmp}/weft-rand-local.XXXXXX")
cleanup() {
	"$WEFT" down --dir "$S" >/dev/null 2>&1 || true
	rm -rf "$S" "$L"
}
trap cleanup EXIT
"$WEFT" up --dir "$S" --stores 4 >/dev/null
M=$S/mnt
mkdir "$M/r1" "$M/r2"
"$WEFT" setstripe "$M/r1" --replicas 1 --dir "$S" >/dev/null
"$WEFT" setstripe "$M/r2" --replicas 2 --dir "$S" >/dev/null
for d in "$M/r1" "$M/r2" "$L"; do
	dd if=/dev/urandom of="$d/f" bs=1M count=1024 conv=fsync status=none
done
row() { # row NAME DIR BS DIRECT: "IOPS p99_us"
	sync; echo 3 >/proc/sys/vm/drop_caches
	fio --name=r --filename="$2/f" --rw=randread --bs="$3" --iodepth=16 --ioengine=libaio \
		--direct="$4" --runtime="$SECS" --time_based --size=1G --output-format=json 2>/dev/null |
		python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]["read"]
print("%.0f %.0f" % (j["iops"], j["clat_ns"]["percentile"]["99.000000"] / 1000))'
}
echo "| bs | direct | local IOPS | local p99 us | weft r1 IOPS | r1 p99 us | r1/local | weft r2 IOPS | r2 p99 us | r2/local |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for bs in 4k 1M; do
	for direct in 0 1; do
		read -r li lp < <(row local "$L" "$bs" "$direct")
		read -r ai ap < <(row r1 "$M/r1" "$bs" "$direct")
		read -r bi bp < <(row r2 "$M/r2" "$bs" "$direct")
		awk -v bs="$bs" -v d="$direct" -v li="$li" -v lp="$lp" -v ai="$ai" -v ap="$ap" \
			-v bi="$bi" -v bp="$bp" 'BEGIN { printf "| %s | %s | %d | %d | %d | %d | %.2f | %d | %d | %.2f |\n",
			bs, d, li, lp, ai, ap, ai / li, bi, bp, bi / li }'
	done
done
