#!/usr/bin/env bash
# Permissions end to end, as several non-root users (uids 2001-2003 sharing group 3001):
# perm_diff's scenarios on a local directory and on weft must give the same result for
# every step, with the kernel's caches cold and warm, and with the changes made on one
# mount while the users act through a second one. Then the trust model: a non-root user
# cannot read the cluster key, and neither meta nor a store serves a peer without it;
# and root of a client mounted with root_squash (the default off weft up) is nobody.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
# the forged-key peers below make meta and the store log one line each
ALLOWED_ERRORS='authentication failed from .*: (wrong cluster key|peer closed during handshake)'

PD="$BUILD/tests/integration/perm_diff"
cluster_up --stores 2 --replicas 1
chmod 755 "$T"
diffrun() { # diffrun NAME: compares $T/NAME.weft with the local reference
	diff -u "$T/local.out" "$T/$1.weft" || fail "$1: permissions differ from the local file system"
	ok "$1: $(wc -l <"$T/$1.weft") steps identical to the local file system"
}

mkdir -m 755 "$T/local"
"$PD" "$T/local" "$T/local" >"$T/local.out" 2>&1
grep -q 'cannot' "$T/local.out" && fail "perm_diff could not switch users: $(grep cannot "$T/local.out")"
[ "$(grep -c ': ok$' "$T/local.out")" -gt 20 ] && [ "$(grep -c ': EACCES$' "$T/local.out")" -gt 20 ] \
	&& [ "$(grep -c ': EPERM$' "$T/local.out")" -gt 5 ] || fail "the local reference looks wrong"

# one mount, kernel caches cold (dropped first) and warm (every user stats the tree
# before each batch of changes)
mkdir -m 755 "$MNT/cold" "$MNT/warm"
echo 2 >/proc/sys/vm/drop_caches
"$PD" "$MNT/cold" "$MNT/cold" >"$T/cold.weft" 2>&1
diffrun cold
"$PD" --warm "$MNT/warm" "$MNT/warm" >"$T/warm.weft" 2>&1
diffrun warm

# a second mount (attribute timeout 1 s, root_squash as any mount other than weft up's):
# changes through the first, users act through the second after the timeout
mkdir -p "$T/mnt2"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$T/mnt2" --key "$STATE/cluster.key" \
	-o allow_other,attr_timeout=1 --log "$T/mount2.log"
mkdir -m 755 "$MNT/two"
"$PD" --warm --settle 1.1 "$MNT/two" "$T/mnt2/two" >"$T/two.weft" 2>&1
diffrun two

# a cached attribute grants nothing meta refuses: B stats a 0666 file through the second
# mount, root makes it 0600 through the first, and B at once truncates it by path and
# opens it for writing through the second, whose kernel still holds 0666: both refused,
# and no byte lost (the stores' objects are cut only after meta agreed)
printf 0123456789 >"$MNT/two/stale"
chmod 666 "$MNT/two/stale"
asB() { setpriv --reuid=2002 --regid=2002 --clear-groups "$@"; }
asB stat "$T/mnt2/two/stale" >/dev/null
chmod 600 "$MNT/two/stale"
asB perl -e 'truncate($ARGV[0], 2) or exit 1' "$T/mnt2/two/stale" \
	&& fail "truncate through a second mount's stale attributes succeeded"
asB sh -c 'echo x >>"$1"' sh "$T/mnt2/two/stale" 2>/dev/null \
	&& fail "open for writing through a second mount's stale attributes succeeded"
[ "$(cat "$MNT/two/stale")" = 0123456789 ] || fail "a refused truncate cut the data: $(od -c "$MNT/two/stale" | head -2)"
# the same for a user in more groups than a request carries (40, the file's group last: the kernel sorts them):
# meta must not take it for "other" (0604: others may read, the group may not)
printf x >"$MNT/two/g40"
chown 2003:3001 "$MNT/two/g40"
chmod 644 "$MNT/two/g40"
as40() { setpriv --reuid=2001 --regid=2001 --groups="$(seq -s, 2100 2138),3001" "$@"; }
as40 stat "$T/mnt2/two/g40" >/dev/null
chmod 604 "$MNT/two/g40"
as40 cat "$T/mnt2/two/g40" >/dev/null 2>&1 \
	&& fail "a user in 40 groups read a 0604 file of its 40th group through stale attributes"
ok "stale attributes on a second mount: truncate and open refused by meta, data intact (also with 40 groups)"

# root_squash: root of the second mount is nobody; weft up's own mount keeps root
echo secret >"$MNT/rootonly"
chmod 600 "$MNT/rootonly"
cat "$T/mnt2/rootonly" >/dev/null 2>&1 && fail "root_squash: root of a second mount read a 0600 root file"
touch "$T/mnt2/two/squashed" 2>/dev/null && fail "root_squash: root of a second mount created a file in a 0755 root directory"
touch "$T/mnt2/two/o/bynobody" || fail "root_squash: root of a second mount cannot create in a 0777 directory"
[ "$(stat -c %u:%g "$MNT/two/o/bynobody")" = 65534:65534 ] \
	|| fail "root_squash: a file root made is owned by $(stat -c %u:%g "$MNT/two/o/bynobody"), not nobody"
[ "$(cat "$MNT/rootonly")" = secret ] || fail "weft up's mount lost root"
grep -q 'root_squash' "$T/mount2.log" || fail "the second mount does not say it squashes root"
# listing a directory: the mount leaves the open to the kernel's check, and meta checks
# every READDIR; a squashed root is checked with meta at the open (opendir fails, as on
# a local file system), as is a user whose view of the mode is old
mkdir -m 700 "$MNT/two/private"
touch "$MNT/two/private/x"
asB ls "$T/mnt2/two/private" >/dev/null 2>&1 && fail "a user listed a 0700 directory of root's"
python3 -c 'import os,sys; os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)' \
	"$T/mnt2/two/private" 2>/dev/null \
	&& fail "root_squash: root of a second mount opened a 0700 directory of root's"
python3 -c 'import os,sys; os.listdir(sys.argv[1])' "$T/mnt2/two/private" 2>/dev/null \
	&& fail "root_squash: root of a second mount listed a 0700 directory of root's"
mkdir -m 755 "$MNT/two/shut"
touch "$MNT/two/shut/x"
asB ls "$T/mnt2/two/shut" >/dev/null || fail "a user cannot list a 0755 directory"
chmod 700 "$MNT/two/shut"
asB ls "$T/mnt2/two/shut" >/dev/null 2>&1 && fail "a user listed a directory made 0700 since its last listing"
ok "listing: 0700 directories refused to a user and to a squashed root, also right after a chmod"
umount "$T/mnt2"
ok "root_squash: root of a second mount is nobody; weft up's mount keeps root"

# trust model: the key is root's alone, and without it nobody is served
key="$STATE/cluster.key"
[ "$(stat -c %a:%u "$key")" = 600:0 ] || fail "cluster key is $(stat -c %a:%u "$key"), not 600 root"
setpriv --reuid=2001 --regid=2001 --clear-groups cat "$key" >/dev/null 2>&1 \
	&& fail "a non-root user read the cluster key"
setpriv --reuid=2001 --regid=2001 --clear-groups "$WEFT" ping "$(cat "$STATE/meta.addr")" \
	--count 1 --key "$key" >"$T/ping-nokey.out" 2>&1 && fail "a non-root user pinged meta with root's key file"
mkdir -m 777 "$T/u"
setpriv --reuid=2001 --regid=2001 --clear-groups "$WEFT" keygen "$T/u/forged.key" >/dev/null \
	|| fail "keygen as a user"
setpriv --reuid=2001 --regid=2001 --clear-groups "$WEFT" ping "$(cat "$STATE/meta.addr")" \
	--count 1 --key "$T/u/forged.key" >"$T/ping-meta.out" 2>&1 && fail "meta served a peer with another key"
store_addr=$(cat "$STATE/store0.addr")
setpriv --reuid=2001 --regid=2001 --clear-groups "$WEFT" ping "$store_addr" \
	--count 1 --key "$T/u/forged.key" >"$T/ping-store.out" 2>&1 && fail "a store served a peer with another key"
sleep 0.2
grep -q 'authentication failed from .*wrong cluster key' "$STATE/logs/meta.log" || fail "meta did not log the forged key"
grep -q 'authentication failed from .*wrong cluster key' "$STATE/logs/store0.log" || fail "the store did not log the forged key"
ok "the cluster key is root's (0600); meta and stores refuse a peer without it"
check_logs
