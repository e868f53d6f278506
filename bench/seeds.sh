#!/usr/bin/env bash
# Reproduces the seed reports' commands on a weft cluster started by weft up, beside the
# same commands on a local directory in the same run, and prints a table with ratios.
#
#   bash bench/seeds.sh [--quick] [--stores N] [--replicas R] [--only LIST] [--tar-subset DIR]
#
# LIST: comma-separated of dd,fio,lmdd,tar (default all). --quick shrinks sizes for a
# smoke run. $WEFT_UP_MOUNT_OPTS (e.g. wb_attrs) adds options to both mounts. --tar-subset extracts only that directory of the kernel tarball (e.g.
# linux-source-6.1/fs) for seed 004. Needs root (drop_caches, mount). State in
# /var/tmp/weft-bench ($WEFT_BENCH_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-$PWD/build/weft}
STORES=4 REPLICAS=1 ONLY=dd,fio,lmdd,tar QUICK=0 SUBSET=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1 ;;
	--stores) STORES=$2; shift ;;
	--replicas) REPLICAS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--tar-subset) SUBSET=$2; shift ;;
	*) echo "usage: $0 [--quick] [--stores N] [--replicas R] [--only dd,fio,lmdd,tar]" >&2; exit 2 ;;
	esac
	shift
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }

B=${WEFT_BENCH_DIR:-/var/tmp/weft-bench}
LOCAL=$B/local
STATE=$B/state
MNT=$B/mnt
MNT2=$B/mnt2
MNT_NOCRC=$B/mnt-nocrc
DD_MB=$([ $QUICK = 1 ] && echo 512 || echo 4096)
FIO_TOTAL_MB=$([ $QUICK = 1 ] && echo 512 || echo 2048)
TARBALL=/usr/src/linux-source-6.1.tar.xz

cleanup() {
	for m in "$MNT2" "$MNT_NOCRC"; do mountpoint -q "$m" && umount "$m" || true; done
	"$WEFT" down --dir "$STATE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

rm -rf "$B"
mkdir -p "$LOCAL" "$MNT" "$MNT2" "$MNT_NOCRC"
"$WEFT" up --dir "$STATE" --mount "$MNT" --stores "$STORES" --replicas "$REPLICAS" >/dev/null
META=$(cat "$STATE/meta.addr")
KEY=$STATE/cluster.key

ROWS=()
row() { ROWS+=("| $1 | $2 | $3 | $4 |"); }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# secs CMD...: wall seconds of a command
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }
mbps() { awk -v mb="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", mb * 1.048576 / s; else print 0 }'; }

dd_write() { dd if=/dev/zero of="$1" bs=1M count="$DD_MB" conv=fsync status=none; }
dd_read() { dd if="$1" of=/dev/null bs=1M status=none; }

if want dd; then
	# seed 000: dd of a large file, then read back after dropping caches
	lw=$(secs dd_write "$LOCAL/dd"); drop; lr=$(secs dd_read "$LOCAL/dd"); rm -f "$LOCAL/dd"
	ww=$(secs dd_write "$MNT/dd"); drop; wr=$(secs dd_read "$MNT/dd"); rm -f "$MNT/dd"
	row "dd write ${DD_MB} MiB bs=1M conv=fsync (MB/s)" "$(mbps "$DD_MB" "$ww")" "$(mbps "$DD_MB" "$lw")" "$(ratio "$(mbps "$DD_MB" "$ww")" "$(mbps "$DD_MB" "$lw")")"
	row "dd read back, caches dropped (MB/s)" "$(mbps "$DD_MB" "$wr")" "$(mbps "$DD_MB" "$lr")" "$(ratio "$(mbps "$DD_MB" "$wr")" "$(mbps "$DD_MB" "$lr")")"
fi

fio_bw() { # fio_bw DIR rw N -> MB/s
	local dir=$1 rw=$2 n=$3 size=$((FIO_TOTAL_MB / $3))
	[ $size -lt 8 ] && size=8
	fio --name=seed001 --directory="$dir" --rw="$rw" --bs=8M --size="${size}M" --numjobs="$n" \
		--end_fsync=1 --group_reporting --ioengine=psync --output-format=terse 2>/dev/null |
		awk -F';' -v rw="$rw" '{ print (rw == "read" ? $7 : $48) / 1024 * 1.048576 }' | awk '{printf "%.0f", $1}'
}

if want fio; then
	# seed 001: N-to-N sequential write and read, 8 MiB records
	for n in 1 2 4 8 16 64; do
		lw=$(fio_bw "$LOCAL" write $n); drop; lr=$(fio_bw "$LOCAL" read $n); rm -f "$LOCAL"/seed001*
		ww=$(fio_bw "$MNT" write $n); drop; wr=$(fio_bw "$MNT" read $n); rm -f "$MNT"/seed001*
		row "fio N-to-N write, N=$n, 8 MiB records (MB/s)" "$ww" "$lw" "$(ratio "$ww" "$lw")"
		row "fio N-to-N read, N=$n (MB/s)" "$wr" "$lr" "$(ratio "$wr" "$lr")"
	done
fi

if want lmdd; then
	# seed 002: one stream, bs=1M with fsync, checksums on and off
	"$WEFT" mount "$META" "$MNT_NOCRC" --key "$KEY" -o checksums=off,allow_other,no_root_squash
	lw=$(secs dd_write "$LOCAL/one"); rm -f "$LOCAL/one"
	on=$(secs dd_write "$MNT/one"); rm -f "$MNT/one"
	off=$(secs dd_write "$MNT_NOCRC/one"); rm -f "$MNT_NOCRC/one"
	row "single stream dd bs=1M conv=fsync, checksums on (MB/s)" "$(mbps "$DD_MB" "$on")" "$(mbps "$DD_MB" "$lw")" "$(ratio "$(mbps "$DD_MB" "$on")" "$(mbps "$DD_MB" "$lw")")"
	row "single stream dd bs=1M conv=fsync, checksums off (MB/s)" "$(mbps "$DD_MB" "$off")" "$(mbps "$DD_MB" "$lw")" "$(ratio "$(mbps "$DD_MB" "$off")" "$(mbps "$DD_MB" "$lw")")"
	umount "$MNT_NOCRC"
fi

if want tar && [ -f "$TARBALL" ]; then
	# seed 004: tar xf of a kernel tree, sync; du -s; rm -rf, sync; from 1 and 2 mounts
	# ("+ sync" rows: sync(1) on local, weft sync on the mount)
	[ -f "$B/linux.tar" ] || xz -dc "$TARBALL" >"$B/linux.tar"
	# sync(1) does not reach a FUSE mount: on weft, weft sync is what makes the
	# extraction durable (and finishes the flushes that closes left behind)
	wsync() { case $1 in "$LOCAL"*) sync ;; *) "$WEFT" sync "$1" ;; esac; }
	untar() { tar xf "$B/linux.tar" -C "$1" $SUBSET && wsync "$1"; }
	dus() { du -s "$1" >/dev/null; }
	rmrf() { rm -rf "$1"/linux-source-6.1 && wsync "$1"; }
	mkdir -p "$LOCAL/t1" "$MNT/t1"
	lt=$(secs untar "$LOCAL/t1"); drop; ld=$(secs dus "$LOCAL/t1"); lrm=$(secs rmrf "$LOCAL/t1")
	wt=$(secs untar "$MNT/t1"); ld2=$(secs dus "$MNT/t1"); wrm=$(secs rmrf "$MNT/t1")
	what="linux-6.1${SUBSET:+ (${SUBSET#*/} only)}"
	row "tar xf $what + sync, 1 mount (s)" "$wt" "$lt" "$(ratio "$lt" "$wt")"
	row "du -s, 1 mount (s)" "$ld2" "$ld" "$(ratio "$ld" "$ld2")"
	row "rm -rf + sync, 1 mount (s)" "$wrm" "$lrm" "$(ratio "$lrm" "$wrm")"
	# two mounts at once, each in its own directory
	"$WEFT" mount "$META" "$MNT2" --key "$KEY" \
		-o "allow_other,no_root_squash${WEFT_UP_MOUNT_OPTS:+,$WEFT_UP_MOUNT_OPTS}"
	mkdir -p "$MNT/a" "$MNT2/b" "$LOCAL/a" "$LOCAL/b"
	t0=$(date +%s.%N)
	untar "$MNT/a" & untar "$MNT2/b" & wait
	t1=$(date +%s.%N); w2=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	t0=$(date +%s.%N)
	untar "$LOCAL/a" & untar "$LOCAL/b" & wait
	t1=$(date +%s.%N); l2=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	row "tar xf $what + sync, 2 mounts at once (s, both done)" "$w2" "$l2" "$(ratio "$l2" "$w2")"
	t0=$(date +%s.%N); rmrf "$MNT/a" & rmrf "$MNT2/b" & wait; t1=$(date +%s.%N)
	w2r=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	t0=$(date +%s.%N); rmrf "$LOCAL/a" & rmrf "$LOCAL/b" & wait; t1=$(date +%s.%N)
	l2r=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	row "rm -rf + sync, 2 mounts at once (s)" "$w2r" "$l2r" "$(ratio "$l2r" "$w2r")"
	umount "$MNT2"
fi

echo "weft: $STORES stores, replicas $REPLICAS, on this machine (loopback); local: $LOCAL ($(df -T "$LOCAL" | awk 'NR==2 {print $2}'))"
echo "| benchmark | weft | local | weft/local (time rows: local/weft) |"
echo "|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
