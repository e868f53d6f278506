#!/usr/bin/env bash
# Small files read cold: N files of SIZE bytes in 20 directories, read back with
#   find DIR -type f -print0 | xargs -0 cat >/dev/null
# after drop_caches, on local ext4 (a directory under /var/tmp) and on weft (a fresh
# `weft up` cluster, 4 stores, replicas 2), for each size. Then the same read again
# without dropping caches (hot: the kernel's page cache, kept across opens). Also counts
# what meta wrote during the cold weft read: database commits and syncs (its Prometheus
# counters) and write_bytes from /proc/PID/io.
#   bash bench/small_read.sh [WEFT] [N] [SIZES...]
#   e.g. bash bench/small_read.sh build/weft 5000 2 1024 16384 262144
# Run as root (drop_caches, FUSE), ideally in its own network namespace.
set -euo pipefail
WEFT=${1:-build/weft}
N=${2:-5000}
shift 2 || true
SIZES=${*:-2 1024 16384 262144}
WEFT=$(readlink -f "$WEFT")
W=$(mktemp -d /var/tmp/weft-small.XXXXXX)
trap '"$WEFT" down --dir "$W/s" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

make_files() { # make_files DIR SIZE
	local d=$1 size=$2 i
	head -c "$size" /dev/urandom >"$W/payload"
	for i in $(seq 0 19); do mkdir -p "$d/d$i"; done
	for i in $(seq 0 $((N - 1))); do cp "$W/payload" "$d/d$((i % 20))/f$i"; done
	sync
}

read_all() { # read_all DIR -> seconds
	local t0 t1
	t0=$(now)
	find "$1" -type f -print0 | xargs -0 cat >/dev/null
	t1=$(now)
	secs "$t0" "$t1"
}

metric() {
	curl -s "http://$(cat "$W/s/meta.metrics.addr")/metrics" |
		awk -v re="$1" '$0 !~ /^#/ && $0 ~ re {s += $NF} END {print s + 0}'
}
meta_wbytes() { awk '/^write_bytes/ {print $2}' "/proc/$(cat "$W/s/meta.pid")/io"; }

printf '%-8s %6s %10s %10s %7s %10s %8s %8s %12s\n' size files ext4_s weft_s ratio weft_hot_s commits syncs meta_wbytes
for size in $SIZES; do
	rm -rf "$W/local" "$W/s"
	make_files "$W/local" "$size"
	echo 3 >/proc/sys/vm/drop_caches
	local_s=$(read_all "$W/local")
	rm -rf "$W/local"

	"$WEFT" up --dir "$W/s" --mount "$W/s/mnt" --stores 4 --replicas 2 --metrics >/dev/null
	make_files "$W/s/mnt/small" "$size"
	sleep 2 # releases and sizes of the last files settle
	echo 3 >/proc/sys/vm/drop_caches
	c0=$(metric weft_meta_db_commits_total) s0=$(metric weft_meta_db_syncs_total) b0=$(meta_wbytes)
	weft_s=$(read_all "$W/s/mnt/small")
	c1=$(metric weft_meta_db_commits_total) s1=$(metric weft_meta_db_syncs_total) b1=$(meta_wbytes)
	hot_s=$(read_all "$W/s/mnt/small")
	"$WEFT" down --dir "$W/s" >/dev/null
	printf '%-8s %6s %10s %10s %7s %10s %8s %8s %12s\n' "$size" "$N" "$local_s" "$weft_s" \
		"$(awk -v a="$weft_s" -v b="$local_s" 'BEGIN { printf "%.1f", a / b }')" "$hot_s" \
		$((c1 - c0)) $((s1 - s0)) $((b1 - b0))
done
