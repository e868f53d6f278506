#!/usr/bin/env bash
# What FUSE alone costs an extraction (issue 8): `tar xf` of the kernel tree (or a part
# of it) onto local ext4, onto the null FUSE file system (bench/nullfuse.c: answers
# every request at once and keeps only names, with weft's mount's FUSE settings
# and its default_permissions) and onto a fresh `weft up --stores 4 --replicas 2`, in
# the same run; prints seconds, the ratios, and the FUSE requests the kernel sent per
# entry to null FUSE and to weft (perf's fuse tracepoints), with their mean time. Then,
# on each, caches dropped before each: `du -s` of the extracted tree and `rm -rf` of it
# (with sync; `weft sync` on weft).
#
#   bash bench/tar_floor.sh [WEFT] [SUBSET]
#
# WEFT: the weft binary (default build/weft); SUBSET: a path inside the tarball (default
# the whole tree, linux-source-6.1). Needs root and perf; run it in a network namespace
# of its own (ip netns exec), one benchmark at a time.
set -euo pipefail
W=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/weft}
SUBSET=${2:-linux-source-6.1}
NULLFUSE=$(dirname "$W")/bench/nullfuse
D=${WEFT_BENCH_DIR:-/var/tmp/weft-bench-floor}
TARBALL=/usr/src/linux-source-6.1.tar.xz
mkdir -p "$D"
[ -f "$D/linux.tar" ] || xz -dc "$TARBALL" >"$D/linux.tar"
entries=$(tar tf "$D/linux.tar" "$SUBSET" | wc -l)
cleanup() {
	umount "$D/null" 2>/dev/null || true
	"$W" down --dir "$D/state" >/dev/null 2>&1 || true
	rm -rf "$D/local" "$D/null" "$D/mnt" "$D/state" "$D/perf.data"
}
trap cleanup EXIT
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }
# requests NAME: FUSE requests per entry and their mean µs (send to end), from perf.data
requests() {
	perf script -i "$D/perf.data" 2>/dev/null | awk -v e="$entries" -v name="$1" '
	/fuse_request_send/ { for (i = 1; i <= NF; i++) { if ($i == "req") r = $(i + 1); if ($i ~ /^\(FUSE_/) op = $i }
		t = $4; sub(":", "", t); st[r] = t; so[r] = op }
	/fuse_request_end/ { for (i = 1; i <= NF; i++) if ($i == "req") r = $(i + 1)
		t = $4; sub(":", "", t); if (r in st) { n[so[r]]++; s[so[r]] += t - st[r]; delete st[r] } }
	END { line = ""; for (o in n) if (n[o] >= e / 20) { g = o; gsub(/[()]|FUSE_/, "", g)
		line = line sprintf(" %s %.2f×%.0fµs", g, n[o] / e, 1e6 * s[o] / n[o]) }
		print name " requests per entry:" line }'
}
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# psecs CMD...: secs of CMD alone, with the FUSE requests recorded into perf.data
# meanwhile (perf started before and stopped after, outside the time)
psecs() { local pid t
	perf record -q -e fuse:fuse_request_send,fuse:fuse_request_end -a -o "$D/perf.data" \
		>/dev/null 2>&1 &
	pid=$!
	sleep 2
	t=$(secs "$@")
	kill -INT "$pid"; wait "$pid" || true
	echo "$t"; }
cleanup
mkdir -p "$D/local" "$D/null" "$D/mnt"

drop
lt=$(secs sh -c "tar xf '$D/linux.tar' -C '$D/local' '$SUBSET' && sync")
drop; ldu=$(secs du -s "$D/local/$SUBSET")
drop; lrm=$(secs sh -c "rm -rf '$D/local/$SUBSET' && sync")

"$NULLFUSE" "$D/null" --files 1 --size 4096 --default-permissions
sleep 0.3
drop
t0=$(date +%s.%N)
perf record -q -e fuse:fuse_request_send,fuse:fuse_request_end -a -o "$D/perf.data" -- \
	tar xf "$D/linux.tar" -C "$D/null" "$SUBSET" >/dev/null 2>&1
nt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
nreq=$(requests "null FUSE")
nt2=$(secs tar xf "$D/linux.tar" -C "$D/null" --transform 's,^,again/,' "$SUBSET")
drop; ndu=$(secs du -s "$D/null/$SUBSET")
drop; nrm=$(psecs rm -rf "$D/null/$SUBSET"); nrmreq=$(requests "null FUSE rm -rf")
umount "$D/null"

export WEFT_RUN_DIR=$D/run
"$W" up --dir "$D/state" --mount "$D/mnt" --stores 4 --replicas 2 >/dev/null
drop
wt=$(secs tar xf "$D/linux.tar" -C "$D/mnt" "$SUBSET"); ws=$(secs "$W" sync "$D/mnt")
perf record -q -e fuse:fuse_request_send,fuse:fuse_request_end -a -o "$D/perf.data" -- \
	tar xf "$D/linux.tar" -C "$D/mnt" --transform 's,^,again/,' "$SUBSET" >/dev/null 2>&1
wreq=$(requests "weft")
drop; wdu=$(secs du -s "$D/mnt/$SUBSET")
drop; wrm=$(psecs sh -c "rm -rf '$D/mnt/$SUBSET' && '$W' sync '$D/mnt'"); wrmreq=$(requests "weft rm -rf")

echo "tar xf $SUBSET ($entries entries)"
echo "local ext4 tar xf + sync: $lt s"
echo "null FUSE tar xf: $nt s under perf, $nt2 s without ($(awk -v a="$nt2" -v b="$lt" 'BEGIN { printf "%.1f", a / b }')x local)"
echo "weft tar xf + weft sync: $wt + $ws s ($(awk -v a="$wt" -v s="$ws" -v b="$lt" 'BEGIN { printf "%.1f", (a + s) / b }')x local, $(awk -v a="$wt" -v s="$ws" -v b="$nt2" 'BEGIN { printf "%.1f", (a + s) / b }')x null FUSE)"
echo "$nreq"
echo "$wreq (the second extraction, under perf)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
echo "du -s, cold: local $ldu s, null FUSE $ndu s ($(ratio "$ndu" "$ldu")x local), weft $wdu s ($(ratio "$wdu" "$ldu")x local, $(ratio "$wdu" "$ndu")x null FUSE)"
echo "rm -rf + sync, cold: local $lrm s, null FUSE $nrm s ($(ratio "$nrm" "$lrm")x local), weft $wrm s ($(ratio "$wrm" "$lrm")x local, $(ratio "$wrm" "$nrm")x null FUSE)"
echo "$nrmreq"
echo "$wrmreq"
