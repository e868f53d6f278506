#!/usr/bin/env bash
# weft mkfs and weft meta over the wire: every operation with its errno cases, listings
# under concurrent change, bad input (malformed payloads, hostile names, garbage after
# authentication), root_squash, IPv6, and a clean stop.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/meta_lib.sh"

# mkfs: usage errors, refusing an existing fs, --force keeps the key
set +e
"$WEFT" mkfs >/dev/null 2>&1; [ $? -eq 2 ] || fail "mkfs without --meta should exit 2"
"$WEFT" mkfs --meta "$T/m" --replicas 4 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--replicas 4 should exit 2"
"$WEFT" mkfs --meta "$T/m" --stripe-unit 3M >/dev/null 2>&1; [ $? -eq 2 ] || fail "--stripe-unit 3M should exit 2"
set -e
uuid=$("$WEFT" mkfs --meta "$T/m")
echo "$uuid" | grep -Eq '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$' || fail "uuid: $uuid"
[ "$(stat -c %a "$T/m/cluster.key")" = 600 ] || fail "key mode"
if "$WEFT" mkfs --meta "$T/m" 2>"$T/mkfs.err"; then fail "mkfs over an existing fs"; fi
grep -q 'already there' "$T/mkfs.err" || fail "mkfs message: $(cat "$T/mkfs.err")"
cp "$T/m/cluster.key" "$T/key.before"
uuid2=$("$WEFT" mkfs --meta "$T/m" --force --stripe-unit 1M --replicas 1)
[ "$uuid2" != "$uuid" ] || fail "--force kept the old fs"
cmp -s "$T/key.before" "$T/m/cluster.key" || fail "--force replaced the key"
ok "mkfs"

# weft meta: missing fs, bad options
if "$WEFT" meta "$T/nothing" --key "$T/m/cluster.key" -f 2>"$T/nofs.err"; then fail "meta on no fs"; fi
grep -q 'no file system' "$T/nofs.err" || fail "no fs message: $(cat "$T/nofs.err")"
set +e; "$WEFT" meta "$T/m" --target-timeout abc >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad timeout should exit 2"; set -e

start_meta meta "$T/m" 127.0.0.1:0
echo "meta at $META_ADDR"
"$WEFT" ping "$META_ADDR" --key "$T/m/cluster.key" --count 100 | grep -q '0 errors' || fail "ping"
"$MC" "$T/m/cluster.key" "$META_ADDR" proto || fail "protocol tests"
"$MC" "$T/m/cluster.key" "$META_ADDR" bad || fail "bad input tests"
"$WEFT" ping "$META_ADDR" --key "$T/m/cluster.key" --count 100 | grep -q '0 errors' || fail "meta stopped serving"
"$WEFT" status --meta "$META_ADDR" --key "$T/m/cluster.key" >"$T/status.out" || fail "status"
cat "$T/status.out"
grep -q 'targets: 3' "$T/status.out" || fail "status: targets"
grep -Eq '^ +1 +node-a +127.0.0.1:1 +up' "$T/status.out" || fail "status: target line"
grep -q '2 replicas: 3 chains' "$T/status.out" || fail "status: chains"
"$WEFT" df --meta "$META_ADDR" --key "$T/m/cluster.key" >"$T/df.out" || fail "df"
cat "$T/df.out"
grep -Eq "^weft@$META_ADDR +3.0T +" "$T/df.out" || fail "df line"
stop_meta meta
ok "protocol and bad input"

# everything is still there after a restart (and the fs opens cleanly)
start_meta meta2 "$T/m" 127.0.0.1:0
"$MC" "$T/m/cluster.key" "$META_ADDR" bad || fail "bad input tests after restart"
stop_meta meta2

# root_squash: uid 0 of clients is nobody
"$WEFT" mkfs --meta "$T/sq" --root-squash >/dev/null
start_meta squash "$T/sq" 127.0.0.1:0
"$MC" "$T/sq/cluster.key" "$META_ADDR" squash || fail "root squash"
stop_meta squash
ok "root_squash"

# IPv6
if ip -6 addr show lo 2>/dev/null | grep -q '::1'; then
	start_meta v6 "$T/m" '[::1]:0'
	case "$META_ADDR" in \[::1\]:*) ;; *) fail "v6 address: $META_ADDR";; esac
	"$WEFT" ping "$META_ADDR" --key "$T/m/cluster.key" --count 10 | grep -q '0 errors' || fail "ping v6"
	stop_meta v6
	ok "ipv6"
fi
ALLOWED_ERRORS='bad magic|malformed|payload|frame|closing'
check_meta_logs
ok "meta protocol"
