#!/usr/bin/env bash
# The deleter: a file unlinked while open keeps its objects until its last release;
# then meta (role META) sends OBJ_DELETE for it to the store holding its chain, and the
# record is gone from the queue (no second delete after a restart).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/meta_lib.sh"

"$WEFT" mkfs --meta "$T/m" >/dev/null
KEY="$T/m/cluster.key"
start_meta meta "$T/m" 127.0.0.1:0
ADDR=$META_ADDR
start store "$MC" "$KEY" "$ADDR" fakestore
wait_file "$T/store.log"
grep -q 'registered target 1' "$T/store.log" || fail "fake store: $(cat "$T/store.log")"
"$MC" "$KEY" "$ADDR" unlinkone >"$T/unlink.out" 2>&1 &
UL=$!
wait_file "$T/unlink.out"
INO=$(awk '/^ino /{print $2}' "$T/unlink.out")
[ -n "$INO" ] || fail "no ino"
# unlinked but still open: its data must stay
sleep 0.5
grep -q "deleted $INO " "$T/store.log" && fail "objects deleted while the file was open"
wait $UL || fail "unlinkone: $(cat "$T/unlink.out")"
n=100; while ! grep -q "deleted $INO role 4" "$T/store.log" && [ $n -gt 0 ]; do sleep 0.1; n=$((n-1)); done
grep -q "deleted $INO role 4" "$T/store.log" || fail "no OBJ_DELETE for $INO: $(cat "$T/store.log")"
# released only after a 1 s open: the delete must not have come before the release
first=$(grep -n "deleted $INO" "$T/store.log" | head -1 | cut -d: -f1)
[ "$(grep -c "deleted $INO" "$T/store.log")" = 1 ] || fail "deleted more than once"
stop_meta meta
start_meta meta2 "$T/m" "$ADDR"
sleep 3
[ "$(grep -c "deleted $INO" "$T/store.log")" = 1 ] || fail "the record survived its completion"
stop_meta meta2
check_meta_logs
ok "meta deleter (line $first)"
