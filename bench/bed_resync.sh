#!/usr/bin/env bash
# Resync and rebuild on the multi-host bed (tests/bed): their rates in MB/s and what
# they take from an application writing at the same time.
#   1. baseline: dd MB MiB conv=fsync into a replicas-2 directory from the client host;
#   2. resync: one store is killed, MB MiB more are written while it is away, it comes
#      back; time until every chain serves again and the bytes it copied (the growth of
#      its objects/), while the same dd runs again (its MB/s against the baseline);
#   3. rebuild: `weft target out` of another store: a target on a free node takes its
#      place and copies its chains' objects; the same measures.
# The store copier is capped by --resync-rate (RESYNC_RATE MB/s, default the store's
# 64; 0 for no cap). Links are shaped to RATE (default 1gbit).
#
#   sudo bash bench/bed_resync.sh [MB] [RATE]      (default 1024 1gbit)
#
# Indicative: every "link" is a veth on one 2-core machine.
set -uo pipefail
cd "$(dirname "$0")/.."
MB=${1:-1024}
RATE=${2:-1gbit}
export WEFT=${WEFT:-$PWD/build/weft}
source tests/integration/lib.sh
set +e
source tests/bed/bed.sh
BED=${BED:-rs$$-}
source tests/bed/cluster.sh
trap 'exit 143' TERM INT HUP
pre_cleanup() { bedc_down; }
[ -n "${RESYNC_RATE:-}" ] && BEDC_STORE_ARGS="--resync-rate $RESYNC_RATE"

bedc_up 5 --stripe-count 0 --stripe-unit 1M
bed_shape "$RATE" || fail "tbf shaping"
mkdir -p "$MNT/r2"
bedc_weft setstripe "$MNT/r2" --replicas 2 >/dev/null || fail setstripe
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}'; }
mbps() { awk -v b="$1" -v s="$2" 'BEGIN {printf "%.1f", b / s / 1e6}'; }
objbytes() { du -sb "$T/store$1/objects" 2>/dev/null | cut -f1; }
app() { # app NAME: dd MB MiB conv=fsync, prints MB/s
	local t0; t0=$(now)
	dd if=/dev/zero of="$MNT/r2/$1" bs=1M count="$MB" conv=fsync 2>/dev/null || fail "dd $1"
	mbps $((MB << 20)) "$(since "$t0")"
}
# runs the app while waiting for every 2-replica chain to serve; sets APP, SECS
during() {
	local t0 a
	t0=$(now)
	app "$1" >"$T/app.out" &
	a=$!
	bedc_wait_table_serving 2 600
	SECS=$(since "$t0")
	wait "$a"
	APP=$(cat "$T/app.out")
}

W0=$(app base)

# ---- resync ----
V=2 # host of the victim store
VT=$(bedc_target_of $V)
kill -9 "$(eval echo "\$PID_store$V")"
bedc_wait_down "$VT" 30
for i in $(seq 4); do
	dd if=/dev/zero of="$MNT/r2/away$i" bs=1M count=$((MB / 4)) conv=fsync 2>/dev/null ||
		fail "write while target $VT is away"
done
before=$(objbytes $V)
bedc_store_start $V
during resync
# less what the application wrote to the victim's chains meanwhile (its objects there)
ino=$(stat -c %i "$MNT/r2/resync")
appv=$(find "$T/store$V/objects" -name "$(printf '%016x' "$ino").*" -printf '%s\n' | awk '{s += $1} END {print s + 0}')
RS_BYTES=$(( $(objbytes $V) - before - appv ))
RS_SECS=$SECS RS_APP=$APP

# ---- rebuild ----
O=3
OT=$(bedc_target_of $O)
declare -A b0
for ((h = 2; h <= BEDC_STORES + 1; h++)); do b0[$h]=$(objbytes $h); done
bedc_weft target out "$OT" >"$T/out.txt" 2>&1 || fail "weft target out: $(cat "$T/out.txt")"
sleep 1 # the new member appears in the tables
during rebuild
RB_BYTES=0
for ((h = 2; h <= BEDC_STORES + 1; h++)); do
	[ "$h" = "$O" ] && continue
	d=$(( $(objbytes $h) - b0[$h] )); [ $d -gt 0 ] && RB_BYTES=$((RB_BYTES + d))
done
RB_BYTES=$((RB_BYTES - (MB << 20) * 2)) # less what the application itself wrote (2 copies)
[ $RB_BYTES -lt 0 ] && RB_BYTES=0

echo "resync and rebuild on the bed: links $RATE (tbf), 5 stores, replicas 2, app dd $MB MiB"
echo "store --resync-rate: ${RESYNC_RATE:-64 (default)} MB/s"
printf "%-34s %10s %10s %10s\n" "" "copied MB" "seconds" "MB/s"
printf "%-34s %10s %10s %10s\n" "resync after $((MB)) MiB missed" "$((RS_BYTES / 1000000))" "$RS_SECS" "$(mbps "$RS_BYTES" "$RS_SECS")"
printf "%-34s %10s %10s %10s\n" "rebuild (weft target out)" "$((RB_BYTES / 1000000))" "$SECS" "$(mbps "$RB_BYTES" "$SECS")"
printf "%-34s %10s %10s\n" "application dd MB/s" "MB/s" "ratio"
printf "%-34s %10s %10s\n" "  alone" "$W0" "1.00"
printf "%-34s %10s %10s\n" "  during resync" "$RS_APP" "$(awk -v a="$RS_APP" -v b="$W0" 'BEGIN {printf "%.2f", a / b}')"
printf "%-34s %10s %10s\n" "  during rebuild" "$APP" "$(awk -v a="$APP" -v b="$W0" 'BEGIN {printf "%.2f", a / b}')"
