#!/usr/bin/env bash
# A/B of two weft builds on the same machine, rounds interleaved (A B A B ...) so that
# the machine's drift hits both alike: per round a fresh `weft up` cluster (4 stores,
# replicas 2), then
#   dd    write SIZE MiB bs=1M conv=fsync, then read it back with caches dropped
#   small create + write 4 KiB + close of N files, then read them all back (cat)
# Prints one line per round and build; keep it small (the machine may be shared).
#   bash bench/ab_small.sh WEFT_A WEFT_B [ROUNDS] [SIZE_MIB] [NFILES]
# Run as root (drop_caches, FUSE), ideally in its own network namespace.
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-3} SIZE=${4:-256} N=${5:-1000}
W=$(mktemp -d /tmp/weft-ab.XXXXXX)
trap '"$A" down --dir "$W/s" >/dev/null 2>&1 || true; "$B" down --dir "$W/s" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT

now() { date +%s.%N; }
rate() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.0f", n / (b - a) }'; }

one() { # one NAME WEFT
	local name=$1 weft=$2 m="$W/s/mnt" t0 t1 t2 t3 t4
	rm -rf "$W/s"
	"$weft" up --dir "$W/s" --mount "$m" --stores 4 --replicas 2 >/dev/null
	t0=$(now)
	dd if=/dev/zero of="$m/big" bs=1M count="$SIZE" conv=fsync status=none
	t1=$(now)
	sync; echo 3 >/proc/sys/vm/drop_caches
	cat "$m/big" >/dev/null
	t2=$(now)
	mkdir "$m/small"
	head -c 4096 /dev/urandom >"$W/4k"
	for i in $(seq "$N"); do cp "$W/4k" "$m/small/f$i"; done
	t3=$(now)
	sync; echo 3 >/proc/sys/vm/drop_caches
	cat "$m"/small/f* >/dev/null
	t4=$(now)
	printf '%-3s dd write %5s MB/s  dd read %5s MB/s  small create %5s files/s  small read %5s files/s\n' \
		"$name" "$(rate "$t0" "$t1" $((SIZE * 1048576 / 1000000)))" \
		"$(rate "$t1" "$t2" $((SIZE * 1048576 / 1000000)))" \
		"$(rate "$t2" "$t3" "$N")" "$(rate "$t3" "$t4" "$N")"
	"$weft" down --dir "$W/s" >/dev/null
}

for r in $(seq "$ROUNDS"); do
	one A "$A"
	one B "$B"
done
