#!/usr/bin/env bash
# Replicas 2 reads are served by both replicas (issue 17): a file on one chain of two
# stores (stripe count 1), read back through the mount, comes from both members, each
# sending at least a quarter of it (the stores' own served OBJ_READ byte counters, from
# their metrics endpoints); the two other stores send nothing. A file over every chain
# (stripe count 4) is read from all four stores. Every byte read is checked.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

cluster_up --stores 4 --replicas 2 --metrics
fetch() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"; }
# served OBJ_READ bytes of each store, one line "storeN BYTES"
served() {
	for n in store0 store1 store2 store3; do
		fetch "http://$(cat "$STATE/$n.metrics.addr")/metrics" |
			awk -v n=$n '/^weft_served_sent_bytes_total\{/ && /op="OBJ_READ"/ {s += $NF} END {printf "%s %d\n", n, s}'
	done
}
# check_spread NAME FILE WANT: reads FILE cold, checks its bytes, prints what each store
# sent; exactly WANT stores must have served it, each at least half of an even share
check_spread() {
	local before after size
	size=$(stat -c %s "$2")
	sync; echo 3 >/proc/sys/vm/drop_caches # from the stores, not the page cache
	before=$(served)
	[ "$(sha "$2")" = "$(sha "$T/$1.src")" ] || fail "$1: wrong bytes read back"
	after=$(served)
	paste <(echo "$before") <(echo "$after") | awk -v size="$size" -v want="$3" -v name="$1" '
		{ d = $4 - $2; printf "%s: %s sent %.1f MiB\n", name, $1, d / 1048576
		  if (d > 0) n++; if (d >= size / want / 2) big++ }
		END { if (n != want || big != want) { printf "%s: %d stores served (%d with a fair share), want %d\n", name, n, big, want; exit 1 } }' ||
		fail "$1: reads not spread over the replicas"
}

mkdir "$MNT/one" "$MNT/all"
"$WEFT" setstripe "$MNT/one" --stripe-count 1 --replicas 2 --dir "$STATE" >/dev/null || fail "setstripe one"
"$WEFT" setstripe "$MNT/all" --stripe-count 4 --replicas 2 --dir "$STATE" >/dev/null || fail "setstripe all"
head -c $((64 << 20)) /dev/urandom >"$T/one.src"
head -c $((64 << 20)) /dev/urandom >"$T/all.src"
cp "$T/one.src" "$MNT/one/f" && cp "$T/all.src" "$MNT/all/f" && sync || fail "write"

check_spread one "$MNT/one/f" 2
ok "replicas 2 on one chain: both members served the read, each a fair share"
check_spread all "$MNT/all/f" 4
ok "replicas 2 over four chains: all four stores served the read"
