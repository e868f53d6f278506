#!/usr/bin/env bash
# A namespace mutation sent again (its connection died before the reply came) is applied
# once (meta/replies.h): libweft tags it (TAGGED: its client id and request number) and
# sends the same tag again; meta answers a copy from its reply cache, which lives in the
# mutation's own txn, so it holds across a crash of meta too. Each metaclient call below
# is a connection of its own, as a resend after a dropped connection is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/meta_lib.sh"

"$WEFT" mkfs --meta "$T/m" >/dev/null
KEY="$T/m/cluster.key"
start_meta meta0 "$T/m" 127.0.0.1:0
ADDR=$META_ADDR
mc() { "$MC" "$KEY" "$ADDR" tagged "$@" | head -1; }

first=$(mc 5 mkdir d1)
[ "${first%% *}" = 0 ] || fail "tagged mkdir: $first"
again=$(mc 5 mkdir d1)
[ "$again" = "$first" ] || fail "the same mkdir sent again: '$again', expected '$first' (applied twice?)"
ok "a mkdir sent again gets its first reply ($again), not EEXIST"
plain=$(mc 0 mkdir d1)
[ "${plain%% *}" = -17 ] || fail "an untagged mkdir of the same name: '$plain', expected EEXIST"
other=$(mc 6 mkdir d1)
[ "${other%% *}" = -17 ] || fail "another request (xid 6) of the same name: '$other', expected EEXIST"
ok "another request of the same name is applied (EEXIST)"
r1=$(mc 7 rename d1 d2)
r2=$(mc 7 rename d1 d2)
[ "${r1%% *}" = 0 ] && [ "${r2%% *}" = 0 ] || fail "rename and its copy: '$r1' '$r2' (a second apply: ENOENT)"
ok "a rename sent again is answered 0 from the cache"

# across a crash of meta: the record came with the mutation
kill -9 "$PID_meta0"
wait "$PID_meta0" 2>/dev/null || true
export WEFT_META_RECOVERY_MS=2000
start_meta meta1 "$T/m" "$ADDR"
again=$(mc 5 mkdir d1)
[ "$again" = "$first" ] || fail "after a crash, the mkdir sent again: '$again', expected '$first'"
r3=$(mc 7 rename d1 d2)
[ "${r3%% *}" = 0 ] || fail "after a crash, the rename sent again: '$r3'"
ok "after meta was SIGKILLed, copies are still answered from the cache"
# in the recovery window an inode that is not there may be a create a client has yet to
# replay: GETSTRIPE (a store's sweep asks it before deleting objects) says "ask later"
gs=$("$MC" "$KEY" "$ADDR" getstripe 99999 | head -1)
[ "$gs" = -4107 ] || fail "GETSTRIPE of a missing inode in the recovery window: $gs, expected -4107"
sleep "$(( WEFT_META_RECOVERY_MS / 1000 + 1 ))"
gs=$("$MC" "$KEY" "$ADDR" getstripe 99999 | head -1)
[ "$gs" = -116 ] || fail "GETSTRIPE of a missing inode after the recovery window: $gs, expected ESTALE"
ok "GETSTRIPE of a missing inode: WEFT_ERECOVERING in the recovery window, ESTALE after it"
stop_meta meta1
check_meta_logs
