#!/usr/bin/env bash
# One weft store's throughput beside dd on the same disk, checksums on and off.
# usage: bench/bench_store.sh BUILD_DIR [DATA_DIR (default /var/tmp)] [MiB (default 2048)]
# Runs, in one go on DATA_DIR's file system: dd write (conv=fsync) and read (iflag=direct,
# after drop_caches); then for a file system with checksums on and one with them off,
# `weft meta` + one `weft store` on loopback and bench_store writing (then OBJ_FSYNC) and
# reading back (after drop_caches) MiB with 1 MiB and 8 MiB requests. Needs root for
# drop_caches (without it reads may come from the page cache: it says so).
set -euo pipefail
B=$(cd "$1" && pwd); D=${2:-/var/tmp}; N=${3:-2048}
W=$(mktemp -d "$D/weft-bench-store.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; }; done
	rm -rf "$W"
}
trap cleanup EXIT
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(cannot drop caches: reads may hit the page cache)"; }
rate() { grep -oE '[0-9.]+ [GM]B/s' | tail -1; }

echo "disk: $(df -T "$D" | tail -1 | awk '{print $1, $2}'), $N MiB per run"
drop
echo "dd write bs=1M conv=fsync: $(dd if=/dev/zero of="$W/dd" bs=1M count="$N" conv=fsync 2>&1 | rate)"
drop
echo "dd read  bs=1M iflag=direct: $(dd if="$W/dd" of=/dev/null bs=1M iflag=direct 2>&1 | rate)"
drop
echo "dd read  bs=8M iflag=direct: $(dd if="$W/dd" of=/dev/null bs=8M iflag=direct 2>&1 | rate)"
drop
echo "dd read  bs=1M (page cache dropped, readahead): $(dd if="$W/dd" of=/dev/null bs=1M 2>&1 | rate)"
rm -f "$W/dd"

for crc in on off; do
	M="$W/meta-$crc"
	"$B/weft" mkfs --meta "$M" $([ $crc = off ] && echo --no-checksums) >/dev/null
	"$B/weft" meta "$M" --listen 127.0.0.1:0 -f >"$W/meta-$crc.log" 2>&1 &
	PIDS+=($!)
	for i in $(seq 100); do grep -q 'serving .* on' "$W/meta-$crc.log" && break; sleep 0.05; done
	MA=$(grep -oE 'on 127.0.0.1:[0-9]+' "$W/meta-$crc.log" | head -1 | cut -c4-)
	"$B/weft" store "$W/store-$crc" --meta "$MA" --listen 127.0.0.1:0 --node bench \
		--key "$M/cluster.key" -f >"$W/store-$crc.log" 2>&1 &
	PIDS+=($!)
	for i in $(seq 100); do grep -q 'registered as' "$W/store-$crc.log" && break; sleep 0.05; done
	SA=$(grep -oE 'registered as 127.0.0.1:[0-9]+' "$W/store-$crc.log" | head -1 | cut -d' ' -f3)
	for bs in 1048576 8388608; do
		ino=$((bs / 1024))
		opt="--bs $bs --total $((N << 20)) --inflight 8 --objects 4 --ino $ino"
		[ $crc = off ] && opt="$opt --nocrc"
		drop
		echo "store checksums $crc: $("$B/bench/bench_store" "$M/cluster.key" "$MA" "$SA" $opt write)"
		drop
		echo "store checksums $crc: $("$B/bench/bench_store" "$M/cluster.key" "$MA" "$SA" $opt read)"
	done
done
