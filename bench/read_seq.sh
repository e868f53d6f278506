#!/usr/bin/env bash
# Sequential read at the FUSE ceiling (issue 17): a fresh `weft up` cluster (4 stores)
# with a replicas 1 and a replicas 2 directory, beside the null FUSE file system
# (bench/nullfuse.c, zeros, same 4 MiB kernel read-ahead and 1 MiB requests). For a file
# of SIZE written with a deterministic pattern (bench/pattern.c), after drop_caches each
# time, prints `dd bs=1M of=/dev/null` MB/s on weft (r1, r2) and on null FUSE, and the
# ratios; then every weft file is read once more (cold) and every byte checked against
# the pattern. Also the write row: dd conv=fsync of SIZE on weft replicas 1 and on the
# local disk (/var/tmp), same run, and the read row of the same file on the local disk
# (ext4, buffered, after drop_caches): the disk's own cold read rate bounds any file
# system that reads it, FUSE or not.
# Usage (as root): bash bench/read_seq.sh [BUILD] [RUNS] [SIZE_MIB]
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
RUNS=${2:-3}
MIB=${3:-2048}
WEFT=$BUILD/weft
NULLFUSE=$BUILD/bench/nullfuse
PATTERN=$BUILD/bench/pattern
SIZE=$((MIB << 20))
S=$(mktemp -d /tmp/weft-rs.XXXXXX)
LOCAL=$(mktemp -d /var/tmp/weft-rs-local.XXXXXX)
cleanup() {
	umount "$S/null" 2>/dev/null || true
	"$WEFT" down --dir "$S" >/dev/null 2>&1 || true
	rm -rf "$S" "$LOCAL"
}
trap cleanup EXIT

# MB/s from dd's last line (bytes ... copied, SECONDS s, ...)
ddrate() { awk '/copied/ {for (i = 1; i <= NF; i++) if ($(i+1) ~ /^s,?$/) s = $i;
	gsub(",", ".", s); printf "%.0f\n", $1 / s / 1e6}'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
readrate() { drop; dd if="$1" of=/dev/null bs=1M 2>&1 | ddrate; }
writerate() { dd if=/dev/zero of="$1" bs=1M count="$MIB" conv=fsync 2>&1 | ddrate; }

"$WEFT" up --dir "$S" --stores 4 >/dev/null
M=$S/mnt
mkdir "$M/r1" "$M/r2" "$S/null"
"$WEFT" setstripe "$M/r1" --replicas 1 --dir "$S" >/dev/null
"$WEFT" setstripe "$M/r2" --replicas 2 --dir "$S" >/dev/null
"$NULLFUSE" "$S/null" --size "$SIZE" --files 1
for d in r1 r2; do
	"$PATTERN" gen "$SIZE" 17 | dd of="$M/$d/f" bs=1M iflag=fullblock conv=fsync status=none
done
"$PATTERN" gen "$SIZE" 17 | dd of="$LOCAL/f" bs=1M iflag=fullblock conv=fsync status=none

echo "| run | local write MB/s | weft r1 write MB/s | ratio | local read MB/s | weft r1 read MB/s | weft r2 read MB/s | null FUSE read MB/s | r1/null | r2/null | r1/local read | r2/local read |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for r in $(seq "$RUNS"); do
	lw=$(writerate "$LOCAL/w"); rm -f "$LOCAL/w"
	ww=$(writerate "$M/r1/w"); rm -f "$M/r1/w"
	r1=$(readrate "$M/r1/f")
	r2=$(readrate "$M/r2/f")
	nf=$(readrate "$S/null/0")
	lr=$(readrate "$LOCAL/f")
	awk -v r="$r" -v lw="$lw" -v ww="$ww" -v r1="$r1" -v r2="$r2" -v nf="$nf" -v lr="$lr" 'BEGIN {
		printf "| %s | %d | %d | %.2f | %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f |\n",
		       r, lw, ww, ww / lw, lr, r1, r2, nf, r1 / nf, r2 / nf, r1 / lr, r2 / lr }'
done
for d in r1 r2; do
	drop
	v=$("$PATTERN" verify "$M/$d/f" "$SIZE" 17) || { echo "$d: VERIFY FAILED"; exit 1; }
	echo "$d: every byte of $MIB MiB verified against the pattern (that read: $v MB/s)"
done
