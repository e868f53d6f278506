#!/usr/bin/env bash
# Growing a live cluster (issue 16): a weft up cluster of 4 stores with 2 replicas gets a
# fifth store, started by hand as on a new machine, while two mounts are in use and two
# applications write (one file after another, and 6 fio jobs verifying with sha256).
# meta builds a fifth chain at a new chain-table epoch; a mount learns of it when a
# layout names the new chain (refresh on a miss) or from its heartbeat reply (the idle
# second mount), so every write goes through with no error, the mount's size grows, new
# files use the new store, and every file reads back right through both mounts. Then
# the fifth store restarts on another port (a new epoch: the mounts follow it without
# reporting it down), `weft target add` adds a sixth, and the cluster goes down and up
# with all six.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

eval "$(declare -f pre_cleanup | sed '1s/pre_cleanup/cluster_pre_cleanup/')"
pre_cleanup() {
	mountpoint -q "$T/mnt2" 2>/dev/null && { umount "$T/mnt2" || umount -l "$T/mnt2"; }
	cluster_pre_cleanup
}

cluster_up --stores 4 --replicas 2
META=$(cat "$STATE/meta.addr")
KEY=$STATE/cluster.key
ok "weft up: 4 stores, replicas 2"

# a second mount, opened while the table still has four chains
mkdir -p "$T/mnt2"
"$WEFT" mount "$META" "$T/mnt2" --key "$KEY" -o no_root_squash --pid-file "$T/mount2.pid" --log "$T/mount2.log" \
	|| fail "second mount failed"

head -c $((24 << 20)) /dev/urandom >"$T/src"
file_of() { # file_of I SIZE_MIB: a slice of the random source, unique per I
	dd if="$T/src" bs=1M skip=$(( $1 % 20 )) count="$2" status=none
	echo "$1"
}
declare -A WANT
for i in $(seq 0 11); do
	file_of "$i" 2 >"$T/f"
	cp "$T/f" "$MNT/old$i" || fail "writing old$i before the store was added"
	WANT[old$i]=$(sha "$T/f")
done
ok "12 files written before the fifth store"

"$WEFT" status --dir "$STATE" >"$T/status0.out"
size0=$(df -B1 --output=size "$MNT" | tail -1)
epoch0=$(sed -n 's/.*epoch \([0-9]*\).*/\1/p' "$T/status0.out" | head -1)

# an application writing through the first mount all along (checked at the end)
mkdir -p "$MNT/bg"
(
	i=0
	while [ ! -e "$T/bg.stop" ]; do
		dd if="$T/src" bs=256k skip=$((i % 80)) count=6 status=none >"$T/bg.f"
		echo "bg$i" >>"$T/bg.f"
		if cp "$T/bg.f" "$MNT/bg/f$i"; then
			echo "f$i $(sha "$T/bg.f")" >>"$T/bg.sums"
		else
			echo "f$i" >>"$T/bg.errors"
		fi
		i=$((i + 1))
	done
) &
BG=$!
PIDS+=($BG)
# and many threads of another application: 6 fio jobs writing and then verifying
# (sha256) their files across the membership change (the second mount stays idle)
mkdir -p "$MNT/fio"
fio --name=grow --directory="$MNT/fio" --rw=write --bs=128k --size=24M --numjobs=6 \
	--ioengine=psync --verify=sha256 --do_verify=1 --verify_fatal=1 --verify_state_save=0 --end_fsync=1 \
	>"$T/fio.out" 2>&1 &
FIO=$!
PIDS+=($FIO)
sleep 0.5

# the fifth store, started as a user would on a new machine
mkdir -p "$STATE/store4"
"$WEFT" store "$STATE/store4" --meta "$META" --listen 127.0.0.1:0 --node node4 --key "$KEY" \
	--pid-file "$STATE/store4.pid" --log "$STATE/logs/store4.log" || fail "fifth store did not start"
for _ in $(seq 100); do
	"$WEFT" status --dir "$STATE" >"$T/status1.out" 2>&1 || true
	[ "$(grep -c ' up ' "$T/status1.out")" = 5 ] && break
	sleep 0.1
done
[ "$(grep -c ' up ' "$T/status1.out")" = 5 ] || fail "fifth store not up: $(cat "$T/status1.out")"
epoch1=$(sed -n 's/.*epoch \([0-9]*\).*/\1/p' "$T/status1.out" | head -1)
[ -n "$epoch1" ] && [ "$epoch1" -gt "${epoch0:-0}" ] || fail "chain epoch did not move: $epoch0 -> $epoch1"
size1=$(df -B1 --output=size "$MNT" | tail -1)
[ "$size1" -gt "$size0" ] || fail "the mount's size did not grow with the fifth store: $size0 -> $size1"
ok "fifth store registered; chain tables at epoch $epoch1 (was $epoch0); df: $size0 -> $size1 bytes"

# at once (no waiting for a heartbeat), 12 new files through the first mount: their
# layouts name the fifth chain, which the mount's table does not have yet
errs=0
for i in $(seq 0 11); do
	file_of "$((i + 100))" 4 >"$T/f"
	cp "$T/f" "$MNT/new$i" 2>>"$T/cp.err" || errs=$((errs + 1))
	WANT[new$i]=$(sha "$T/f")
done
[ "$errs" = 0 ] || fail "$errs of 12 writes failed after the store was added: $(sort -u "$T/cp.err" | head -3)"
grep -q "chain tables version $epoch1:" "$STATE/logs/mount.log" || fail "the mount did not refetch its tables"
ok "12 new 4 MiB files written at once through the first mount, no error"

# the second mount did no I/O since: meta's push (CHAINS_CHANGED) brought it the new
# epoch, and it fetched the tables
for _ in $(seq 100); do
	grep -q "chain tables version $epoch1:" "$T/mount2.log" && break
	sleep 0.1
done
grep -q "meta announced chain tables version $epoch1\$" "$T/mount2.log" || \
	fail "meta did not push epoch $epoch1 to the idle mount: $(grep -h 'chain tables' "$T/mount2.log")"
grep -q "chain tables version $epoch1:" "$T/mount2.log" || fail "the idle mount never fetched epoch $epoch1"
ok "meta pushed epoch $epoch1 to the idle second mount, which fetched the tables"
for i in $(seq 12 23); do
	file_of "$((i + 100))" 4 >"$T/f"
	cp "$T/f" "$T/mnt2/new$i" 2>>"$T/cp.err" || errs=$((errs + 1))
	WANT[new$i]=$(sha "$T/f")
done
[ "$errs" = 0 ] || fail "$errs of 12 writes through the second mount failed: $(sort -u "$T/cp.err" | head -3)"
ok "12 more through the second mount, no error"

wait "$FIO" || fail "fio failed: $(grep -iE 'err|verify' "$T/fio.out" | head -5)"
grep -q "err= 0" "$T/fio.out" || fail "fio reported errors: $(cat "$T/fio.out" | head -20)"
ok "6 fio jobs wrote and verified 144 MiB across the change"
touch "$T/bg.stop"
wait "$BG"
[ ! -s "$T/bg.errors" ] || fail "the application's writes failed: $(wc -l <"$T/bg.errors") of them"
nbg=$(wc -l <"$T/bg.sums")
[ "$nbg" -ge 5 ] || fail "the background writer wrote only $nbg files"
ok "an application writing all along: $nbg files, no error"

# every file right through both mounts, from the stores (not the page cache)
echo 3 >/proc/sys/vm/drop_caches
for f in "${!WANT[@]}"; do
	for m in "$MNT" "$T/mnt2"; do
		[ "$(sha "$m/$f")" = "${WANT[$f]}" ] || fail "$m/$f: wrong content"
	done
done
while read -r f want; do
	[ "$(sha "$T/mnt2/bg/$f")" = "$want" ] || fail "bg/$f: wrong content"
done <"$T/bg.sums"
ok "all ${#WANT[@]} files and the application's $nbg read back right through both mounts"

# new files use the new store: its target got data and holds objects
"$WEFT" getstripe --dir "$STATE" "$MNT/new0" >"$T/layout.out" || fail "getstripe failed"
grep -q "of 5" "$T/layout.out" || \
	fail "a new file's layout does not span 5 chains: $(cat "$T/layout.out")"
"$WEFT" status --dir "$STATE" >"$T/status2.out"
# the target row of node4: id node addr state size free read written ...
written=$(awk '$2 == "node4" {print $8}' "$T/status2.out")
[ -n "$written" ] && [ "$written" != 0 ] || fail "the new store got no data: $(cat "$T/status2.out")"
ok "new files land on the new store ($written written to it); $(grep first_chain "$T/layout.out")"

# the fifth store restarts on another port: meta records the new address at a new
# epoch, the mounts learn it from their heartbeats and write to it there (no target is
# reported unreachable, none goes down)
pid4=$(cat "$STATE/store4.pid")
addr4=$(awk '$2 == "node4" {print $3}' "$T/status2.out")
kill "$pid4"
for _ in $(seq 100); do kill -0 "$pid4" 2>/dev/null || break; sleep 0.1; done
"$WEFT" store "$STATE/store4" --meta "$META" --listen 127.0.0.1:0 --node node4 --key "$KEY" \
	--pid-file "$STATE/store4.pid" --log "$STATE/logs/store4.log" || fail "fifth store did not restart"
"$WEFT" status --dir "$STATE" >"$T/status3.out"
addr4b=$(awk '$2 == "node4" {print $3}' "$T/status3.out")
[ "$addr4b" != "$addr4" ] || fail "the restarted store kept its port $addr4"
epoch3=$(sed -n 's/.*epoch \([0-9]*\).*/\1/p' "$T/status3.out" | head -1)
for m in "$STATE/logs/mount.log" "$T/mount2.log"; do
	for _ in $(seq 100); do grep -q "chain tables version $epoch3:" "$m" && break; sleep 0.1; done
	grep -q "chain tables version $epoch3:" "$m" || fail "$m never learned of epoch $epoch3 (new address)"
done
for i in 0 1 2 3 4; do
	file_of "$((i + 300))" 4 >"$T/f"
	cp "$T/f" "$MNT/moved$i" || fail "writing moved$i after the store moved"
	[ "$(sha "$T/mnt2/moved$i")" = "$(sha "$T/f")" ] || fail "moved$i: wrong content"
done
! grep -q "reported to meta" "$STATE/logs/mount.log" "$T/mount2.log" || \
	fail "a mount reported a target unreachable: $(grep -h 'reported to meta' "$STATE/logs/mount.log" "$T/mount2.log" | head -2)"
"$WEFT" status --dir "$STATE" >"$T/status4.out"
[ "$(grep -c ' up ' "$T/status4.out")" = 5 ] || fail "not all 5 stores up: $(cat "$T/status4.out")"
ok "the fifth store moved $addr4 -> $addr4b: mounts learned it at epoch $epoch3 and wrote to it"

# weft target add: the documented way on a weft up cluster (a sixth store)
"$WEFT" target add --dir "$STATE" >"$T/add.out" 2>&1 || fail "weft target add: $(cat "$T/add.out")"
grep -q "^target [0-9]* added (.* on node5)" "$T/add.out" || fail "weft target add said: $(cat "$T/add.out")"
for i in 0 1 2 3; do
	m=$MNT; [ $i -ge 2 ] && m=$T/mnt2
	file_of "$((i + 200))" 3 >"$T/f"
	cp "$T/f" "$m/six$i" || fail "writing six$i after weft target add"
	[ "$(sha "$T/mnt2/six$i")" = "$(sha "$T/f")" ] || fail "six$i: wrong content"
done
"$WEFT" getstripe --dir "$STATE" "$MNT/six0" | grep -q "of 6" || fail "six0 does not span 6 chains"
"$WEFT" target add --dir "$T/nowhere" >"$T/add2.out" 2>&1 && fail "target add on no cluster succeeded"
grep -q "not a cluster started by weft up" "$T/add2.out" || fail "unclear error: $(cat "$T/add2.out")"
ok "weft target add: $(head -1 "$T/add.out"); files written through both mounts"

# down and up again: weft up starts all six stores (not only --stores' default four)
umount "$T/mnt2"
cluster_down
cluster_up
for _ in $(seq 100); do
	"$WEFT" status --dir "$STATE" >"$T/status5.out" 2>&1 || true
	[ "$(grep -c ' up ' "$T/status5.out")" = 6 ] && break
	sleep 0.1
done
[ "$(grep -c ' up ' "$T/status5.out")" = 6 ] || fail "not all 6 stores up after weft up: $(cat "$T/status5.out")"
for f in "${!WANT[@]}"; do
	[ "$(sha "$MNT/$f")" = "${WANT[$f]}" ] || fail "$f: wrong content after down and up"
done
ok "down and up: all 6 stores up, all ${#WANT[@]} files right"

cluster_down
check_logs
