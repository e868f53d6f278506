#!/usr/bin/env bash
# Disk errors (issue 9): a store whose disk answers EIO. On a `weft up` cluster of 4
# stores, replicas 2, a preloaded library (faultdisk.so) makes one store's object files
# fail:
#   reads:  every file still reads back right (the other replica serves the pieces);
#           the store logs the failed reads and copies the objects again; it stays up.
#   writes: the application's writes succeed; the store fails itself at once (serves
#           nothing more, reports itself to meta), meta takes it offline in its chains.
#   back:   the disk "replaced" (no more faults) and the store restarted, it rebuilds
#           its chains (not a sync from the missed log: a failed write may have left
#           stale bytes), serves again, and with the other member of a chain killed
#           every file of that chain reads back right from the rebuilt copy alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
SO=$BUILD/tests/integration/libfaultdisk.so
[ -f "$SO" ] || SO=$BUILD/tests/integration/faultdisk.so
[ -f "$SO" ] || fail "faultdisk library not built in $BUILD/tests/integration"
export WEFT_FAULT_CTL=$T/fault
export LD_PRELOAD=$SO
# under ASan the preloaded library comes before the sanitizer's runtime: allowed here
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

store_of() {
	"$WEFT" status --dir "$STATE" | awk -v t="$1" '$1 == t && $2 ~ /^node/ { sub("node", "store", $2); print $2 }'
}
members() { # members CHAIN: target ids of a 2-replica chain, in order
	"$WEFT" status --dir "$STATE" | awk -v c="$1" '
		/replicas?: [0-9]+ chains/ { cur = $1 }
		cur == 2 && $1 == "chain" && $2 == c {
			for (i = 4; i <= NF; i++) if ($i != "->") { split($i, a, "("); printf "%s ", a[1] }
			print "" }'
}
member_state() { # member_state CHAIN TARGET
	"$WEFT" status --dir "$STATE" | awk -v c="$1" -v t="$2" '
		/replicas?: [0-9]+ chains/ { cur = $1 }
		cur == 2 && $1 == "chain" && $2 == c {
			for (i = 4; i <= NF; i++) { split($i, a, "[()]"); if (a[1] == t) print a[2] } }'
}
chain_of() { "$WEFT" getstripe "$1" --dir "$STATE" | awk '/first_chain/ { print $2 }'; }
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
wait_state() { # wait_state CHAIN TARGET STATE SECONDS
	local n=$(($4 * 10))
	while [ "$(member_state "$1" "$2")" != "$3" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	[ "$(member_state "$1" "$2")" = "$3" ]
}
check_all() { # check_all WHAT: every file reads back right after drop_caches
	local f
	drop
	for f in "$T"/want/*; do
		cmp -s "$MNT/d/$(basename "$f")" "$f" || fail "$1: $(basename "$f") reads back wrong"
	done
}

cluster_up --stores 4 --replicas 2
mkdir -p "$MNT/d" "$T/want"
# 64K units, one stripe: a file's rows alternate between the members when read, so the
# faulty store serves part of every read of its chains
"$WEFT" setstripe "$MNT/d" --dir "$STATE" --stripe-count 1 --stripe-unit 64K --replicas 2 >/dev/null
for i in $(seq 8); do
	head -c 300000 /dev/urandom >"$T/want/f$i"
	cp "$T/want/f$i" "$MNT/d/f$i"
done
sync
CHAIN=$(chain_of "$MNT/d/f1")
read -r VICTIM OTHER < <(members "$CHAIN")
VSTORE=$(store_of "$VICTIM")
VLOG=$STATE/logs/$VSTORE.log
ok "target $VICTIM ($VSTORE) and $OTHER hold f1 (chain $CHAIN)"

# ---- reads fail ----
echo "read /state/$VSTORE/" >"$WEFT_FAULT_CTL"
check_all "read errors on target $VICTIM"
rm -f "$WEFT_FAULT_CTL"
grep -q "the disk failed a read" "$VLOG" || fail "the store did not log its failed reads: $(tail -5 "$VLOG")"
[ "$(member_state "$CHAIN" "$VICTIM")" = serving ] ||
	fail "target $VICTIM is '$(member_state "$CHAIN" "$VICTIM")' after read errors, not serving"
ok "read errors: every file reads back right, the store logged them and still serves"

# ---- writes fail ----
echo "write /state/$VSTORE/" >"$WEFT_FAULT_CTL"
for i in $(seq 9 16); do
	head -c 300000 /dev/urandom >"$T/want/f$i"
	cp "$T/want/f$i" "$MNT/d/f$i" || fail "write of f$i failed while target $VICTIM's disk fails"
done
# and overwrite files the victim holds: its copy of f1 is now stale
head -c 300000 /dev/urandom >"$T/want/f1"
dd if="$T/want/f1" of="$MNT/d/f1" conv=notrunc,fsync status=none || fail "overwrite of f1 failed"
sync
wait_state "$CHAIN" "$VICTIM" offline 20 ||
	fail "target $VICTIM is '$(member_state "$CHAIN" "$VICTIM")' after a failed write, not offline"
grep -q "reports its disk failing a write" "$STATE/logs/meta.log" ||
	fail "meta did not log the target's report: $(tail -5 "$STATE/logs/meta.log")"
grep -q "the target fails" "$VLOG" || fail "the store did not log its failure"
check_all "after target $VICTIM failed"
ok "write errors: writes succeed, the target fails itself and meta takes it offline at once"

# ---- the disk replaced: restarted, it rebuilds ----
rm -f "$WEFT_FAULT_CTL"
kill -9 "$(cat "$STATE/$VSTORE.pid")"
sleep 0.5
"$WEFT" up --dir "$STATE" --mount "$MNT" >>"$T/up.out" 2>&1 || fail "weft up again failed"
wait_state "$CHAIN" "$VICTIM" serving 60 ||
	fail "target $VICTIM is '$(member_state "$CHAIN" "$VICTIM")' in chain $CHAIN, not serving again"
grep -q "chain 2/$CHAIN: rebuilding from" "$VLOG" ||
	fail "target $VICTIM did not rebuild chain 2/$CHAIN: $(grep "chain 2/$CHAIN" "$VLOG" | tail -3)"
ok "restarted, target $VICTIM rebuilt chain $CHAIN and serves again"
kill -9 "$(cat "$STATE/$(store_of "$OTHER").pid")"
drop
for f in "$T"/want/*; do
	[ "$(chain_of "$MNT/d/$(basename "$f")")" = "$CHAIN" ] || continue
	cmp -s "$MNT/d/$(basename "$f")" "$f" ||
		fail "$(basename "$f") reads back wrong from the rebuilt target $VICTIM alone"
done
ok "with target $OTHER killed, the files of chain $CHAIN read back right from target $VICTIM"
ALLOWED_ERRORS="the target fails|the disk failed|Input/output error|successor|TARGET_FAILED|not serving"
cp "$STATE"/logs/*.log "$T/"
check_logs
