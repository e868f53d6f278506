#!/usr/bin/env bash
# The cost of the protected wire (issue 13 item 4): for each level (none, integrity,
# privacy), on a fresh `weft up` cluster (4 stores, replicas 1, --wire LEVEL) in the same
# run: dd of DD_MB MiB bs=1M conv=fsync into the mount, caches dropped, dd of it back;
# then fio N-to-N sequential write and read (8 MiB records, FIO_MB in all) for each N.
# The order of the levels rotates from run to run (A/B on a shared machine); the last
# table gives the medians over the runs and each level's ratio to none.
# Usage (as root): bash bench/wire_levels.sh [BUILD] [RUNS] [DD_MB] [FIO_MB] [N...]
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
RUNS=${2:-3}
DD_MB=${3:-4096}
FIO_MB=${4:-1024}
shift 4 2>/dev/null || shift $#
NS=${*:-1 4 16}
WEFT=$BUILD/weft
S=$(mktemp -d /tmp/weft-wire.XXXXXX)
OUT=$S.results
cleanup() { "$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"; }
trap cleanup EXIT
: >"$OUT"
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
now() { date +%s.%N; }
mbps() { awk -v mb="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", mb * 1.048576 / (b - a) }'; }
fio_bw() { # fio_bw DIR rw N -> MB/s
	local size=$((FIO_MB / $3))
	fio --name=nn --directory="$1" --rw="$2" --bs=8M --size="${size}M" --numjobs="$3" \
		--end_fsync=1 --group_reporting --ioengine=psync --output-format=terse 2>/dev/null |
		awk -F';' -v rw="$2" '{ printf "%.0f", (rw == "read" ? $7 : $48) / 1024 * 1.048576 }'
}
rec() { echo "$1|$2|$3" >>"$OUT"; echo "run $r, $2: $1 $3 MB/s"; } # rec ROW LEVEL MBPS
# CPU the cluster's daemons (meta, stores, mount) used, in clock ticks: a figure the other
# load on a shared machine moves far less than the throughput
ticks() {
	local t=0 p
	for p in $(pgrep -f -- "$S"); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
HZ=$(getconf CLK_TCK)
cpu() { echo "cpu $1|$2|$(awk -v t="$3" -v mb="$4" -v hz="$HZ" 'BEGIN { printf "%.3f", t / hz / (mb / 1024) }')" >>"$OUT"; } # cpu ROW LEVEL TICKS MB

LEVELS=(none integrity privacy)
for r in $(seq "$RUNS"); do
	for k in 0 1 2; do
		level=${LEVELS[$(( (k + r - 1) % 3 ))]}
		# another cluster on this shared machine may take meta's port between weft up's
		# check and meta's bind: try again on a fresh state
		for try in 1 2 3; do
			"$WEFT" up --dir "$S" --stores 4 --replicas 1 --wire "$level" >/dev/null && break
			"$WEFT" down --dir "$S" >/dev/null 2>&1 || true
			rm -rf "${S:?}"/*
			[ "$try" = 3 ] && { echo "weft up failed 3 times" >&2; exit 1; }
			sleep 1
		done
		"$WEFT" status --dir "$S" | grep -q "^wire: $level" || { echo "cluster is not at $level" >&2; exit 1; }
		M=$S/mnt
		c0=$(ticks); t0=$(now); dd if=/dev/zero of="$M/dd" bs=1M count="$DD_MB" conv=fsync status=none; t1=$(now); c1=$(ticks)
		drop
		c2=$(ticks); t2=$(now); dd if="$M/dd" of=/dev/null bs=1M status=none; t3=$(now); c3=$(ticks)
		rm -f "$M/dd"
		rec "dd write $DD_MB MiB conv=fsync" "$level" "$(mbps "$DD_MB" "$t0" "$t1")"
		cpu "dd write $DD_MB MiB conv=fsync" "$level" $((c1 - c0)) "$DD_MB"
		rec "dd read back, caches dropped" "$level" "$(mbps "$DD_MB" "$t2" "$t3")"
		cpu "dd read back, caches dropped" "$level" $((c3 - c2)) "$DD_MB"
		for n in $NS; do
			c0=$(ticks)
			rec "fio N-to-N write, N=$n" "$level" "$(fio_bw "$M" write "$n")"
			c1=$(ticks)
			cpu "fio N-to-N write, N=$n" "$level" $((c1 - c0)) "$FIO_MB"
			drop
			c0=$(ticks)
			rec "fio N-to-N read, N=$n" "$level" "$(fio_bw "$M" read "$n")"
			c1=$(ticks)
			cpu "fio N-to-N read, N=$n" "$level" $((c1 - c0)) "$FIO_MB"
			rm -f "$M"/nn*
		done
		"$WEFT" down --dir "$S" >/dev/null
		rm -rf "${S:?}"/*
	done
done

echo
echo "| row (MB/s, median of $RUNS; cpu: the daemons' CPU seconds per GiB) | none | integrity | privacy | integrity/none | privacy/none |"
echo "|---|---|---|---|---|---|"
awk -F'|' '
	{ key = $1; if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	  v[key, $2, ++cnt[key, $2]] = $3 }
	function med(key, l,   n, i, j, a, t) {
		n = cnt[key, l]
		for (i = 1; i <= n; i++) a[i] = v[key, l, i]
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END { for (i = 1; i <= nk; i++) { k = order[i]
		a = med(k, "none"); b = med(k, "integrity"); c = med(k, "privacy")
		if (k ~ /^cpu /) printf "| %s | %.3f | %.3f | %.3f | %.2f | %.2f |\n", k, a, b, c, b / a, c / a
		else printf "| %s | %d | %d | %d | %.2f | %.2f |\n", k, a, b, c, b / a, c / a } }' "$OUT"
rm -f "$OUT"
