#!/usr/bin/env bash
# Small files in one round trip (issue 17 item 3): after a READDIRPLUS, an open for reading
# reads the file's first stripe unit at the same time as its OPEN. Shows that the path is
# taken (the mount's open_prefetch counters) and reads the right bytes, cold, for small
# files and for a file larger than a stripe unit; that a file the caller may no longer
# read when it opens is refused (EACCES, not a byte of it served); and that a file
# another mount changed between the listing and the open is read as it is now.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

cluster_up --stores 2 --replicas 2 --metrics
mountpoint -q "$MNT" || fail "not mounted"

# mcount NAME ADDR_FILE: a mount's counter weft_NAME_total
mcount() {
	curl -s "http://$(cat "$2")/metrics" |
		awk -v re="^weft_$1_total" '$0 ~ re {s += $NF} END {print s + 0}'
}
A="$STATE/mount.metrics.addr"

# --- the path is taken, and what it reads is right
mkdir "$MNT/d"
for i in $(seq 40); do head -c $((i * 97 % 5000 + 1)) /dev/urandom >"$T/f$i"; cp "$T/f$i" "$MNT/d/f$i"; done
head -c $((256 << 10)) /dev/urandom >"$T/mid"; cp "$T/mid" "$MNT/d/mid"
head -c $((2500 << 10)) /dev/urandom >"$T/big"; cp "$T/big" "$MNT/d/big" # 3 stripe units
sync
sleep 1
l0=$(mcount open_local "$A") s0=$(mcount open_prefetch_started "$A") h0=$(mcount open_ahead_hits "$A")
echo 3 >/proc/sys/vm/drop_caches
find "$MNT/d" -type f -print0 | xargs -0 cat >/dev/null # listing, then the opens
l1=$(mcount open_local "$A") s1=$(mcount open_prefetch_started "$A") h1=$(mcount open_ahead_hits "$A")
[ $((l1 - l0)) -ge 40 ] || fail "expected >= 40 opens answered by the mount, counted $((l1 - l0))"
# the first opens read with the open; once they follow the listing, the next files ahead
[ $((h1 - h0)) -ge 30 ] || fail "expected >= 30 opens to find their file read ahead in listing order, counted $((h1 - h0))"
[ $((s1 - s0 + h1 - h0)) -ge 40 ] || fail "expected >= 40 opens with the first stripe unit read early, counted $((s1 - s0 + h1 - h0))"
for f in $(seq 40) mid big; do
	n=$f; [ "$f" = mid ] || [ "$f" = big ] || n=f$f
	cmp -s "$MNT/d/$n" "$T/$n" || fail "$n read back wrong after a listing"
done
ok "$((l1 - l0)) opens answered by the mount under the listing's leases, $((h1 - h0)) of them read ahead in listing order; every byte right"
# another user than the lister: meta's answer (the listing's access check was the lister's)
echo 3 >/proc/sys/vm/drop_caches
ls -l "$MNT/d" >/dev/null
l0=$(mcount open_local "$A")
chmod 755 "$T"
setpriv --reuid 2002 --regid 2002 --clear-groups cat "$MNT/d/f5" >"$T/f5.other" ||
	fail "uid 2002 could not read a 0644 file"
cmp -s "$T/f5.other" "$T/f5" || fail "f5 read back wrong by another user"
l1=$(mcount open_local "$A")
[ "$l1" = "$l0" ] || fail "an open by a user other than the lister was answered by the mount"
ok "an open by a user other than the lister goes to meta"
# opened here before and unchanged: the kernel keeps its pages (keep_cache), so a listing
# and an open read nothing early; after drop_caches the bytes still come right
ls -l "$MNT/d" >/dev/null
s2=$(mcount open_prefetch_started "$A")
cat "$MNT/d/f1" "$MNT/d/f2" "$MNT/d/mid" >/dev/null
s3=$(mcount open_prefetch_started "$A")
[ "$s3" = "$s2" ] || fail "opens of files the kernel holds read $((s3 - s2)) first stripe units early"
echo 3 >/proc/sys/vm/drop_caches
ls -l "$MNT/d" >/dev/null
for f in f1 f2 mid; do cmp -s "$MNT/d/$f" "$T/$f" || fail "$f read back wrong after drop_caches"; done
ok "files the kernel may hold from their last open here are not read early"

# a second mount that squashes root (meta sees nobody; the kernel lets root open anything)
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" --key "$STATE/cluster.key" \
	-o metrics=127.0.0.1:0 --pid-file "$T/mount2.pid" --log "$T/mount2.log" \
	|| fail "second mount"
BA=$T/mount2.metrics.addr
for n in $(seq 50); do
	port=$(grep -o 'Prometheus metrics on .*(port [0-9]*)' "$T/mount2.log" 2>/dev/null |
		head -1 | sed 's/.*(port \([0-9]*\))/\1/')
	[ -n "$port" ] && { echo "127.0.0.1:$port" >"$BA"; break; }
	sleep 0.1
done
[ -s "$BA" ] || fail "the second mount's metrics address: $(grep -i metric "$T/mount2.log")"

# --- an open answered by mount A counts at meta: B's unlink leaves A reading the file
chmod 777 "$MNT/d" # B squashes root: nobody unlinks there
head -c $((3 << 20)) /dev/urandom >"$T/held"; cp "$T/held" "$MNT/d/held"
sync
echo 3 >/proc/sys/vm/drop_caches
ls -l "$MNT/d" >/dev/null
l0=$(mcount open_local "$A")
exec 3<"$MNT/d/held"
dd bs=4096 count=1 status=none <&3 >/dev/null # fd 3 now at 4096
l1=$(mcount open_local "$A")
[ $((l1 - l0)) -eq 1 ] || fail "the open of held was not answered by the mount ($((l1 - l0)))"
rm "$B/d/held"
sleep 2 # time for meta's deleter, had it not known of the open
[ -e "$B/d/held" ] && fail "held still listed on B after its unlink"
cat <&3 >"$T/held.read" || fail "reading held after B unlinked it"
exec 3<&-
tail -c +4097 "$T/held" | cmp -s - "$T/held.read" || fail "held read back wrong after B unlinked it"
ok "a file opened by the mount alone and unlinked through B: A reads all of it"

# --- a file read ahead in listing order and changed through B before its open: the
# recall drops what was read; the open reads the new bytes
chmod 666 "$MNT"/d/f[0-9] "$MNT"/d/f1[0-9] # before the listing: A's own change
"$WEFT" sync "$MNT" # the new modes at meta (A buffered them: wbattr)
echo 3 >/proc/sys/vm/drop_caches
ls -l "$MNT/d" >/dev/null
r0=$(mcount open_ahead_reads "$A") h0=$(mcount open_ahead_hits "$A") l0=$(mcount open_local "$A")
cat "$MNT/d/f1" "$MNT/d/f2" "$MNT/d/f3" >/dev/null # in listing order: f4... read ahead
r1=$(mcount open_ahead_reads "$A") l1=$(mcount open_local "$A")
[ $((r1 - r0)) -ge 4 ] ||
	fail "no files read ahead after three opens in listing order ($((r1 - r0)); $((l1 - l0)) of the opens answered by the mount)"
head -c "$(stat -c %s "$T/f6")" /dev/urandom >"$T/f6.new"
cp "$T/f6.new" "$B/d/f6" # nobody on B may write it: mode 0666
for f in f4 f5 f7; do cmp -s "$MNT/d/$f" "$T/$f" || fail "$f read back wrong after read-ahead"; done
cmp -s "$MNT/d/f6" "$T/f6.new" || fail "A read f6 as it was read ahead, before B changed it"
h1=$(mcount open_ahead_hits "$A")
[ $((h1 - h0)) -ge 4 ] || fail "opens of files read ahead did not take the reads ($((h1 - h0)))"
ok "files read ahead in listing order ($((r1 - r0)) reads, $((h1 - h0)) taken); one changed through B meanwhile is read as it is now"

# --- permission revoked between the listing and the open: EACCES, no data
printf 'XYZZY private bytes\n' >"$MNT/d/secret"
chown 2001:2001 "$MNT/d/secret"
chmod 0644 "$MNT/d/secret"
sync
echo 3 >/proc/sys/vm/drop_caches
ls -l "$B/d" >/dev/null # READDIRPLUS on B: nobody may read it, so it comes with a capability
chmod 0600 "$MNT/d/secret" # through A: B's open is refused by meta
d0=$(mcount open_prefetch_dropped "$BA") s0=$(mcount open_prefetch_started "$BA")
out=$(cat "$B/d/secret" 2>&1) && fail "B read a file it may no longer read: $out"
case "$out" in *"Permission denied"*) ;; *) fail "expected EACCES, got: $out" ;; esac
case "$out" in *XYZZY*) fail "data of the refused file reached the reader: $out" ;; esac
d1=$(mcount open_prefetch_dropped "$BA") s1=$(mcount open_prefetch_started "$BA")
[ $((s1 - s0)) -ge 1 ] || fail "the refused open did not start its early read (the test would show nothing)"
[ $((d1 - d0)) -ge 1 ] || fail "the refused open's early read was not dropped"
ok "a file whose mode changed after the listing: EACCES, its early read dropped"

# --- changed through another mount between the listing and the open: the new bytes
echo 3 >/proc/sys/vm/drop_caches
ls -l "$B/d" >/dev/null
d0=$(mcount open_prefetch_dropped "$BA")
for f in f1 f2 mid; do
	head -c "$(stat -c %s "$T/$f")" /dev/urandom >"$T/$f.new" # same size, new bytes
	cp "$T/$f.new" "$MNT/d/$f"
done
head -c 3000 /dev/urandom >"$T/f3.new"; cp "$T/f3.new" "$MNT/d/f3" # a new size
for f in f1 f2 f3 mid; do
	cmp -s "$B/d/$f" "$T/$f.new" || fail "B read $f as it was before A changed it"
done
d1=$(mcount open_prefetch_dropped "$BA")
[ $((d1 - d0)) -ge 4 ] || fail "$((d1 - d0)) early reads dropped for the 4 changed files"
ok "files changed through A after B's listing: B reads the new bytes ($((d1 - d0)) early reads dropped)"

# files read ahead and never opened are given back (3 s, the heartbeat checks): nothing
# of A's pagepool stays in use once every file is closed
for n in $(seq 100); do
	used=$(curl -s "http://$(cat "$A")/metrics" | awk '/^weft_pagepool_used_bytes/ {print $NF}')
	[ "${used:-x}" = 0 ] && break
	sleep 0.1
done
[ "${used:-x}" = 0 ] || fail "A's pagepool holds ${used:-?} bytes 10 s after its last file closed"
ok "reads ahead nobody opened are given back"

umount "$B"
check_logs
