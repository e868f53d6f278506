#!/usr/bin/env bash
# Node credentials and roles (issue 13): on a live weft up cluster, while an application
# writes and checks its files, a node holding a valid client credential tries what only
# stores, admins or meta may do, and to pass for another role or node (tests/integration/
# hostile.c): every attempt is refused with a clear error and logged. A mount, a store
# and the admin verbs work with credentials of their own; a revoked node is refused by
# meta and every store within a second; reissuing a credential refuses the old one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
HOSTILE=${HOSTILE:-$BUILD/tests/integration/hostile}
ALLOWED_ERRORS='authentication failed|refused'

eval "$(declare -f pre_cleanup | sed '1s/pre_cleanup/cluster_pre_cleanup/')"
pre_cleanup() {
	mountpoint -q "$T/mnt2" 2>/dev/null && { umount "$T/mnt2" || umount -l "$T/mnt2"; }
	cluster_pre_cleanup
}

cluster_up --stores 4 --replicas 2
META=$(cat "$STATE/meta.addr")
KEY=$STATE/cluster.key
"$WEFT" status --dir "$STATE" >"$T/status.out"
STORES=$(awk '$1 ~ /^[0-9]+$/ && $3 ~ /:[0-9]+$/ {print $3}' "$T/status.out")
[ "$(echo "$STORES" | wc -w)" = 4 ] || fail "status lists no 4 store addresses: $(cat "$T/status.out")"
STORE1=$(echo "$STORES" | head -1)
ok "weft up: 4 stores at $(echo $STORES)"

# an application writing and checking all along, through the trusted mount
head -c $((8 << 20)) /dev/urandom >"$T/src"
mkdir -p "$MNT/bg" "$MNT/shared"
chmod 1777 "$MNT/shared"
(
	i=0
	while [ ! -e "$T/bg.stop" ]; do
		dd if="$T/src" bs=256k skip=$((i % 24)) count=8 status=none >"$T/bg.f"
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

# ---- issuing credentials ----
"$WEFT" node add evil --role client -o "$T/evil.cred" --dir "$STATE" >"$T/add.out" || fail "node add: $(cat "$T/add.out")"
grep -q "node evil: client credential, serial 1" "$T/add.out" || fail "node add said: $(cat "$T/add.out")"
[ "$(stat -c %a "$T/evil.cred")" = 600 ] || fail "credential file mode $(stat -c %a "$T/evil.cred")"
grep -q '^role client$' "$T/evil.cred" || fail "credential: $(cat "$T/evil.cred")"
grep -q 'service-key' "$T/evil.cred" && fail "a client credential carries the service key"
"$WEFT" node add cl1 --role client -o "$T/cl1.cred" --dir "$STATE" >/dev/null || fail "node add cl1"
"$WEFT" node add ops --role admin -o "$T/ops.cred" --dir "$STATE" >/dev/null || fail "node add ops"
"$WEFT" node add st5 --role store -o "$T/st5.cred" --dir "$STATE" >/dev/null || fail "node add st5"
grep -q 'service-key' "$T/st5.cred" || fail "a store credential lacks the service key"
if "$WEFT" node add bad --role meta --dir "$STATE" 2>"$T/bad.err"; then fail "a meta credential was issued"; fi
grep -q "client, store or admin" "$T/bad.err" || fail "node add --role meta said: $(cat "$T/bad.err")"
"$WEFT" node list --dir "$STATE" >"$T/list.out" || fail "node list"
for n in "evil client 1 active squashed" "cl1 client 1 active squashed" "ops admin 1 active" "st5 store 1 active"; do
	grep -qx "$n" "$T/list.out" || fail "node list lacks '$n': $(cat "$T/list.out")"
done
ok "credentials issued: client, admin, store (mode 0600; only a store's has the service key)"

# ---- the hostile client ----
"$HOSTILE" "$T/evil.cred" "$META" "$STORE1" attacks >"$T/hostile.out" 2>&1 || \
	fail "a hostile request was served: $(grep -v '^refused' "$T/hostile.out")"
nref=$(grep -c '^refused: ' "$T/hostile.out")
[ "$nref" -ge 90 ] || fail "only $nref refusals: $(cat "$T/hostile.out")"
grep -q '^refused: TARGET_REGISTER.*only store' "$T/hostile.out" || fail "TARGET_REGISTER: $(grep TARGET_REGISTER "$T/hostile.out")"
grep -q '^refused: OBJ_DELETE of inode 1 .*only meta' "$T/hostile.out" || fail "OBJ_DELETE: $(grep 'inode 1 ' "$T/hostile.out")"
grep -q '^refused: SESSION_CLOSE of session 1 (.*belongs to node' "$T/hostile.out" || \
	fail "SESSION_CLOSE: $(grep 'session 1 ' "$T/hostile.out")"
grep -q '^refused: HELLO claiming the store role to meta' "$T/hostile.out" || fail "store role claim"
grep -q 'refused TARGET_REGISTER from .*client "evil".*only store' "$STATE/logs/meta.log" || \
	fail "meta did not log the refused TARGET_REGISTER"
grep -q 'evil.*holds a client credential\|client "evil" (serial 1) refused\|store "evil" (serial 1) refused' "$STATE/logs/meta.log" || \
	fail "meta did not log the refused role claim: $(grep -i evil "$STATE/logs/meta.log" | tail -3)"
grep -hq 'refused OBJ_DELETE from .*client "evil"' "$STATE"/logs/store*.log || fail "no store logged the refused OBJ_DELETE"
ok "$nref hostile requests refused, each with its reason, and logged"
# a client may report a store failed, but meta probes it rather than believing it
"$WEFT" status --dir "$STATE" | awk '$1 ~ /^[0-9]+$/ && $3 ~ /:[0-9]+$/ && $4 != "up" {bad=1} END {exit bad}' || \
	fail "a target is not up after the hostile client: $("$WEFT" status --dir "$STATE")"
ok "every target still up"

# ---- a client node's mount, root squashed, with its own credential ----
mkdir -p "$T/mnt2"
"$WEFT" mount "$META" "$T/mnt2" --key "$T/cl1.cred" -o allow_other --pid-file "$T/mount2.pid" --log "$T/mount2.log" \
	|| fail "mount with a client credential failed: $(tail -3 "$T/mount2.log")"
head -c 3M /dev/urandom >"$T/c1"
cp "$T/c1" "$T/mnt2/shared/c1" || fail "write through the credential mount"
[ "$(stat -c %u "$MNT/shared/c1")" = 65534 ] || fail "root of a client node was not squashed: uid $(stat -c %u "$MNT/shared/c1")"
echo 3 >/proc/sys/vm/drop_caches
[ "$(sha "$T/mnt2/shared/c1")" = "$(sha "$T/c1")" ] || fail "read back through the credential mount"
[ "$(sha "$MNT/shared/c1")" = "$(sha "$T/c1")" ] || fail "read back through the trusted mount"
ok "a mount with a client credential writes and reads (root squashed to 65534)"

# ---- a client node's policy (meta clamps what its requests may say) ----
"$WEFT" node set cl1 --uids 1000-1999 --gids 1000-1999 --dir "$STATE" >"$T/set.out" || fail "node set: $(cat "$T/set.out")"
"$WEFT" node list --dir "$STATE" | grep -qx "cl1 client 1 active squashed uids=1000-1999 gids=1000-1999" || \
	fail "node list after set: $("$WEFT" node list --dir "$STATE")"
as() { local u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
chmod 755 "$T" # other users reach the mounts
as 1500 mkdir "$T/mnt2/shared/u1500" || fail "uid 1500, inside cl1's range, cannot mkdir"
[ "$(stat -c %u "$MNT/shared/u1500")" = 1500 ] || fail "u1500 owned by $(stat -c %u "$MNT/shared/u1500")"
if as 2500 mkdir "$T/mnt2/shared/u2500" 2>"$T/u2500.err"; then fail "uid 2500, outside cl1's range, made a directory"; fi
grep -q "Permission denied" "$T/u2500.err" || fail "uid 2500 said: $(cat "$T/u2500.err")"
grep -q "uid 2500 is outside what node cl1 may act as" "$STATE/logs/meta.log" || fail "meta did not log the refused uid"
if as 2500 mkdir "$MNT/shared/u2500"; then :; else fail "uid 2500 refused on the trusted mount"; fi
"$HOSTILE" "$T/cl1.cred" "$META" policy "$(stat -c %i "$MNT/shared")" >"$T/policy.out" 2>&1 || \
	fail "a request outside cl1's policy was served: $(cat "$T/policy.out")"
grep -c '^refused: .*outside what node cl1' "$T/policy.out" | grep -qx 3 || fail "policy refusals: $(cat "$T/policy.out")"
grep -q '^mkdir as uid 0: made' "$T/policy.out" || fail "uid 0's mkdir: $(cat "$T/policy.out")"
[ "$(stat -c %u "$MNT/shared/made-by-root")" = 65534 ] || fail "uid 0 of an untrusted node made a directory of uid $(stat -c %u "$MNT/shared/made-by-root")"
ok "cl1 may act only as uids and gids 1000-1999: 2500 refused through its mount, uid 5000, gid 5000 and group 3000 by hand, uid 0 squashed"
# root of an untrusted node is nobody even when its mount says no_root_squash
umount "$T/mnt2"
"$WEFT" node set cl1 --squash --dir "$STATE" >/dev/null || fail "node set --squash"
"$WEFT" mount "$META" "$T/mnt2" --key "$T/cl1.cred" -o no_root_squash,allow_other --pid-file "$T/mount2.pid" \
	--log "$T/mount2.log" || fail "remount"
touch "$T/mnt2/shared/byroot1" || fail "root's touch through the untrusted node"
[ "$(stat -c %u "$MNT/shared/byroot1")" = 65534 ] || fail "an untrusted node's root made a file of uid $(stat -c %u "$MNT/shared/byroot1")"
"$WEFT" node set cl1 --trusted --dir "$STATE" >/dev/null || fail "node set --trusted"
touch "$T/mnt2/shared/byroot2" || fail "root's touch through the trusted node"
[ "$(stat -c %u "$MNT/shared/byroot2")" = 0 ] || fail "a trusted node's root made a file of uid $(stat -c %u "$MNT/shared/byroot2")"
"$WEFT" node set cl1 --squash --dir "$STATE" >/dev/null
ok "an untrusted node's root is squashed whatever its mount says; trusted (node set --trusted), it is root"
# users set layouts through the mount, with no key, on what they own
as 1500 "$WEFT" setstripe "$T/mnt2/shared/u1500" --stripe-count 2 --replicas 1 2>"$T/ss.err" || \
	fail "setstripe through the mount as uid 1500: $(cat "$T/ss.err")"
as 1500 "$WEFT" getstripe "$T/mnt2/shared/u1500" --json >"$T/gs.json" || fail "getstripe through the mount"
jq -e '.stripe_count == 2 and .replicas == 1' "$T/gs.json" >/dev/null || fail "getstripe: $(cat "$T/gs.json")"
if as 1600 "$WEFT" setstripe "$T/mnt2/shared/u1500" --stripe-count 1 2>"$T/ss2.err"; then
	fail "uid 1600 set the layout of uid 1500's directory"
fi
grep -Eq "u1500: (Permission denied|Operation not permitted)" "$T/ss2.err" || fail "setstripe by a non-owner said: $(cat "$T/ss2.err")"
ok "setstripe and getstripe through the mount as the user (no key); a non-owner refused"

# ---- admin and store credentials ----
"$WEFT" status --meta "$META" --key "$T/ops.cred" >/dev/null || fail "status with an admin credential"
"$WEFT" node list --meta "$META" --key "$T/ops.cred" >/dev/null || fail "node list with an admin credential"
if "$WEFT" node list --meta "$META" --key "$T/evil.cred" 2>"$T/list.err"; then fail "a client listed the nodes"; fi
grep -q "NODE_LIST: a client may not send it (only admin)" "$T/list.err" || fail "node list as a client said: $(cat "$T/list.err")"
if "$WEFT" store "$T/st-bad" --meta "$META" --listen 127.0.0.1:0 --key "$T/evil.cred" -f 2>"$T/stbad.err"; then
	fail "a store ran with a client credential"
fi
grep -q "a store needs a store credential" "$T/stbad.err" || fail "store with a client credential said: $(cat "$T/stbad.err")"
start st5 "$WEFT" store "$T/st5" --meta "$META" --listen 127.0.0.1:0 --key "$T/st5.cred" -f --log "$T/st5.log"
for _ in $(seq 100); do
	"$WEFT" status --dir "$STATE" | grep -q ' st5 .* up ' && break
	sleep 0.1
done
"$WEFT" status --dir "$STATE" | grep -q ' st5 .* up ' || fail "the store with a store credential did not join: $(tail -5 "$T/st5.log")"
ok "admin verbs with an admin credential (a client's refused); a store with a store credential joins"

# ---- revocation ----
"$HOSTILE" "$T/cl1.cred" "$META" connect >/dev/null || fail "cl1 refused before its revocation"
cp "$T/c1" "$T/mnt2/shared/c1b" || fail "write through cl1's mount before its revocation" # connects to stores
"$WEFT" node revoke cl1 --dir "$STATE" >"$T/revoke.out" || fail "node revoke: $(cat "$T/revoke.out")"
t0=$(date +%s%N)
refused=""
while :; do
	all=1
	for a in "$META" $STORES; do
		rc=0; "$HOSTILE" "$T/cl1.cred" "$a" connect >/dev/null 2>&1 || rc=$?
		[ $rc = 3 ] || all=0
	done
	[ $all = 1 ] && { refused=$(( ($(date +%s%N) - t0) / 1000000 )); break; }
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000 ] || break
	sleep 0.05
done
[ -n "$refused" ] || fail "cl1 was still served 5 s after its revocation"
[ "$refused" -le 1000 ] || fail "cl1 refused by meta and every store only after $refused ms"
grep -q "closed [0-9]* connections\? of node cl1: revoked" "$STATE/logs/meta.log" || fail "meta did not close cl1's connections"
grep -hq "closed [0-9]* connections\? of node cl1: revoked" "$STATE"/logs/store*.log || fail "no store closed cl1's connections"
if timeout 20 cp "$T/c1" "$T/mnt2/shared/after" 2>"$T/after.err"; then fail "the revoked mount still writes"; fi
sleep 2
[ "$(wc -l <"$T/mount2.log")" -lt 300 ] || fail "the revoked mount floods its log: $(tail -3 "$T/mount2.log")"
ok "a revoked client is refused by meta and all 4 stores within $refused ms; its mount cannot write ($(head -1 "$T/after.err"))"
"$WEFT" node add cl1 --role client -o "$T/cl1b.cred" --dir "$STATE" >/dev/null || fail "reissue cl1"
"$HOSTILE" "$T/cl1b.cred" "$META" connect >/dev/null || fail "the reissued credential is refused"
"$HOSTILE" "$T/cl1b.cred" "$STORE1" connect >/dev/null || fail "a store refuses the reissued credential"
rc=0; "$HOSTILE" "$T/cl1.cred" "$META" connect >/dev/null 2>&1 || rc=$?
[ $rc = 3 ] || fail "the replaced credential is served (exit $rc)"
ok "reissued: serial 2 served, serial 1 refused"
umount "$T/mnt2" 2>/dev/null || umount -l "$T/mnt2"

# ---- the application saw nothing of it ----
touch "$T/bg.stop"
wait "$BG"
[ ! -s "$T/bg.errors" ] || fail "the application's writes failed: $(wc -l <"$T/bg.errors") of them"
nbg=$(wc -l <"$T/bg.sums")
[ "$nbg" -ge 3 ] || fail "the application wrote only $nbg files"
echo 3 >/proc/sys/vm/drop_caches
while read -r f want; do
	[ "$(sha "$MNT/bg/$f")" = "$want" ] || fail "bg/$f: wrong content"
done <"$T/bg.sums"
ok "the application wrote and read back $nbg files with no error meanwhile"
check_logs
ok "security"
