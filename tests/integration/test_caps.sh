#!/usr/bin/env bash
# Capabilities checked by the stores (issue 13 item 3): on a live weft up cluster, while an
# application writes and reads back its files through the mount (whose capabilities
# live 3 s here, so it renews them all along), a node holding a valid client credential
# sends object requests straight to the stores (tests/integration/hostile.c, mode caps):
# without a capability, with another file's, altered ones (MAC, ino, rights, expiry,
# session, key period), a read capability for a write, another node's, an expired one, a
# revoked node's and an evicted session's. Each is refused with a reason that names it
# and logged by the store; its own valid capabilities and their renewal are served; the
# application's files are intact at the end.
#
#   hostile (client "evil") --OPEN/CAP_GET--> meta
#          \--OBJ_* + capability--> store (head of each file's chain) <-- the mount
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
HOSTILE=${HOSTILE:-$BUILD/tests/integration/hostile}
ALLOWED_ERRORS='authentication failed|refused'
export WEFT_META_CAP_MS=3000   # capabilities live 3 s: the mount renews them, one expires
export WEFT_META_LEASE_MS=1500 # a session that leaves a recall unanswered: evicted in 2.5 s

cluster_up --stores 3 --replicas 2
META=$(cat "$STATE/meta.addr")
ok "weft up: 3 stores, 2 replicas, capabilities of ${WEFT_META_CAP_MS} ms"

# the application: writes, reads back and checks, all along
head -c $((8 << 20)) /dev/urandom >"$T/src"
mkdir -p "$MNT/bg" "$MNT/shared"
chmod 1777 "$MNT/shared"
(
	i=0
	while [ ! -e "$T/bg.stop" ]; do
		dd if="$T/src" bs=256k skip=$((i % 24)) count=8 status=none >"$T/bg.f"
		echo "bg$i" >>"$T/bg.f"
		if cp "$T/bg.f" "$MNT/bg/f$i" && cmp -s "$T/bg.f" "$MNT/bg/f$i"; then
			echo "f$i $(sha "$T/bg.f")" >>"$T/bg.sums"
		else
			echo "f$i" >>"$T/bg.errors"
		fi
		[ $((i % 4)) != 3 ] || truncate -s 100000 "$MNT/bg/f$((i - 1))" 2>>"$T/bg.errors" || echo "trunc $i" >>"$T/bg.errors"
		i=$((i + 1))
	done
) &
BG=$!
PIDS+=($BG)

# the victim: another user's file, not readable by others
head -c $((1 << 20)) /dev/urandom >"$T/victim"
cp "$T/victim" "$MNT/shared/victim"
chown 1000:1000 "$MNT/shared/victim"
chmod 600 "$MNT/shared/victim"
DIR_INO=$(stat -c %i "$MNT/shared")

"$WEFT" node add evil --role client -o "$T/evil.cred" --dir "$STATE" >/dev/null || fail "node add evil"
"$WEFT" node add thief --role client -o "$T/thief.cred" --dir "$STATE" >/dev/null || fail "node add thief"
"$WEFT" node add ops --role admin -o "$T/ops.cred" --dir "$STATE" >/dev/null || fail "node add ops"

"$HOSTILE" "$T/evil.cred" "$META" caps "$DIR_INO" own victim "$T/thief.cred" "$T/ops.cred" \
	>"$T/hostile.out" 2>&1 || fail "a request with a bad capability was served, or a control refused:
$(grep -Ev '^(refused|served \(control\))' "$T/hostile.out")"
nref=$(grep -c '^refused: ' "$T/hostile.out")
nctl=$(grep -c '^served (control): ' "$T/hostile.out")
[ "$nref" -ge 30 ] || fail "only $nref refusals: $(cat "$T/hostile.out")"
[ "$nctl" -ge 9 ] || fail "only $nctl controls served: $(cat "$T/hostile.out")"
expect() { # expect PATTERN: a refusal line matching it
	grep -q "^refused: $1" "$T/hostile.out" || fail "no refusal '$1': $(cat "$T/hostile.out")"
}
expect 'OBJ_READ of the victim.s file without a capability (Permission denied: .*no capability)'
expect 'OBJ_WRITE of the victim.s file without a capability (Permission denied: .*no capability)'
expect 'OBJ_READ of the victim.s file with another file.s capability (.*capability for another file'
expect 'OBJ_WRITE of the victim.s file with another file.s capability (.*capability for another file'
expect 'OBJ_READ with a capability with a byte of the MAC flipped (.*forged, altered'
expect 'OBJ_READ with a capability with its ino changed .*forged, altered'
expect 'OBJ_WRITE with a capability with its rights raised .*forged, altered'
expect 'OBJ_WRITE of our file with a read capability (.*does not allow writing'
expect 'OBJ_WRITE with another node.s capability (.*of another node'
expect 'OBJ_READ with an expired capability (capability expired: .*expired [0-9]* ms ago'
expect 'OBJ_READ with the capability of a revoked node'
expect 'OBJ_WRITE with the capability of an evicted session (.*evicted session'
grep -q '^served (control): CAP_GET renewing our expired capability' "$T/hostile.out" || fail "no renewal"
grep -hq 'refused OBJ_READ of ino [0-9]* from .*client "evil".*no capability' "$STATE"/logs/store*.log || \
	fail "no store logged a refused OBJ_READ: $(grep -h refused "$STATE"/logs/store*.log | head -3)"
grep -hq 'refused OBJ_WRITE of ino [0-9]* from .*evicted session' "$STATE"/logs/store*.log || \
	fail "no store logged the evicted session's refused write"
nlog=$(cat "$STATE"/logs/store*.log | grep -c 'refused OBJ_')
for f in "$STATE"/logs/store*.log; do
	[ "$(grep -c 'refused OBJ_' "$f")" -le 40 ] || fail "$f logged more than 40 refusals (rate limit: 5 per kind per 10 s)"
done
ok "$nref requests with missing, foreign, altered, expired, revoked or evicted capabilities refused and logged ($nlog lines); $nctl controls served"
[ "$(sha "$MNT/shared/victim")" = "$(sha "$T/victim")" ] || fail "the victim's file changed"
ok "the victim's file is unchanged"

sleep 4 # the application's capabilities expire and are renewed at least once more
touch "$T/bg.stop"
wait "$BG"
[ ! -s "$T/bg.errors" ] || fail "the application failed: $(head -5 "$T/bg.errors")"
nbg=$(wc -l <"$T/bg.sums")
[ "$nbg" -ge 3 ] || fail "the application wrote only $nbg files"
echo 3 >/proc/sys/vm/drop_caches
n=0
while read -r f want; do
	size=$(stat -c %s "$MNT/bg/$f")
	if [ "$size" = 100000 ]; then
		[ "$(head -c 100000 "$MNT/bg/$f" | sha256sum | cut -d' ' -f1)" = \
		  "$(dd if="$T/src" bs=256k skip=$((${f#f} % 24)) count=8 status=none | head -c 100000 | sha256sum | cut -d' ' -f1)" ] || \
			fail "bg/$f (truncated): wrong content"
	else
		[ "$(sha "$MNT/bg/$f")" = "$want" ] || fail "bg/$f: wrong content"
	fi
	n=$((n + 1))
done <"$T/bg.sums"
grep -q 'renewing its capability' "$STATE"/logs/mount*.log 2>/dev/null && \
	fail "the mount failed to renew a capability: $(grep 'renewing' "$STATE"/logs/mount*.log | head -2)"
ok "the application wrote, truncated and read back $n files with no error, renewing its capabilities"
check_logs
ok "caps"
