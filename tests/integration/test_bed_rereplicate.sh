# Re-replication on the multi-host bed: replicas 2 on 4 store hosts; one store dies and
# never comes back. After `weft target out` (what meta does by itself after
# --replace-after) each of its chains gets another target, which rebuilds the copies
# from the survivor while writes go on, and every chain serves 2 copies again. Checked
# by killing each surviving store in turn and reading every file back (sha256) from
# the copies left, then restarting it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../bed/bed.sh"
trap 'exit 143' TERM INT HUP # so that cleanup (EXIT) takes the bed down
BED=${BED:-wr$$-}
bed_available || { echo "SKIP: network namespaces unavailable here"; exit 77; }
source "$(dirname "$0")/../bed/cluster.sh"
pre_cleanup() { bedc_down; }

bedc_up 4 --replicas 2 --stripe-count 1 --stripe-unit 256K
X=2
XT=$(bedc_target_of $X)
mkdir -p "$T/src" "$MNT/d"
for i in 0 1 2 3 4 5 6 7; do head -c $(( (i + 1) * 150000 )) /dev/urandom >"$T/src/$i"; done
for i in $(seq 0 23); do cp "$T/src/$((i % 8))" "$MNT/d/a$i"; done
ok "24 files written"
kill -KILL "$PID_store2"; wait "$PID_store2" 2>/dev/null || true
bedc_wait_down "$XT" 30
for i in $(seq 0 7); do cp "$T/src/$i" "$MNT/d/b$i"; done
ok "store host $X dead (target $XT); 8 more files written on one copy"
out=$(bedc_weft target out "$XT") || fail "weft target out: $out"
echo "$out"
bedc_wait_table_serving 2 90
bedc_status | awk '/^  2 replicas/ {r=1; next} /^  [13] replica/ {r=0} r' | grep -q "[( ]$XT(" &&
	fail "target $XT still in a 2-replica chain"
grep -h "rebuilding from\|in sync" "$T"/store[345].log | head -4
ok "every 2-replica chain serving 2 copies again without target $XT"

check_all() {
	echo 3 >/proc/sys/vm/drop_caches
	for f in "$MNT"/d/*; do
		n=$(basename "$f"); i=${n#?}
		cmp -s "$f" "$T/src/$((i % 8))" || fail "$n wrong or unreadable with $1 down"
	done
}
for h in 3 4 5; do
	pid=$(eval echo \$PID_store$h)
	kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
	check_all "host $h"
	ok "every file right with store host $h down too"
	bedc_store_start $h
	bedc_wait_table_serving 2 60
done
