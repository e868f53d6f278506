#!/usr/bin/env bash
# Open state is session state: opening, reading and releasing existing files costs meta no
# database commit and no sync; the kernel keeps a file's pages across opens while it is
# unchanged; a file unlinked while open keeps its data across a meta restart (the client
# reclaims its open in a new session) and is freed after its last close.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
# meta killed on purpose: the mount and stores log its absence
ALLOWED_ERRORS='did not answer|connection|Connection|meta|unreachable'

cluster_up --stores 2 --replicas 1 --metrics
mountpoint -q "$MNT" || fail "not mounted"

# metric NAME_REGEX DAEMON [FILE]: the sum of the Prometheus samples whose line matches
# (from FILE, a snapshot taken with snap, if given)
metric() {
	{ if [ -n "${3:-}" ]; then cat "$3"; else curl -s "http://$(cat "$STATE/$2.metrics.addr")/metrics"; fi; } |
		awk -v re="$1" '$0 !~ /^#/ && $0 ~ re {s += $NF} END {print s + 0}'
}
snap() { curl -s "http://$(cat "$STATE/meta.metrics.addr")/metrics" >"$1"; }
WRITERS='weft_served_requests_total.*op="(TARGET_HEARTBEAT|SESSION_OPEN|SESSION_CLOSE|EXTEND|CREATE|CREATE_OPEN|SETATTR|CHAIN_SYNCED)"'

# --- 1,000 opens and reads of existing files: no commit, no sync at meta
mkdir "$MNT/small"
for i in $(seq 100); do printf "%02d" $((i % 100)) >"$MNT/small/f$i"; done
head -c $((64 << 10)) /dev/urandom >"$MNT/small/big"
sync
sleep 1
snap "$T/m0"
c0=$(metric 'weft_meta_db_commits_total' meta "$T/m0")
s0=$(metric 'weft_meta_db_syncs_total' meta "$T/m0")
o0=$(metric 'weft_served_requests_total.*op="OPEN"' meta "$T/m0")
r0=$(metric 'weft_served_requests_total.*op="RELEASE"' meta "$T/m0")
w0=$(metric "$WRITERS" meta "$T/m0")
for round in $(seq 10); do
	echo 3 >/proc/sys/vm/drop_caches
	for i in $(seq 100); do
		[ "$(cat "$MNT/small/f$i")" = "$(printf "%02d" $((i % 100)))" ] || fail "f$i read back wrong"
	done
done
sleep 1 # releases are not waited for: let the last ones arrive
snap "$T/m1"
c1=$(metric 'weft_meta_db_commits_total' meta "$T/m1")
s1=$(metric 'weft_meta_db_syncs_total' meta "$T/m1")
o1=$(metric 'weft_served_requests_total.*op="OPEN"' meta "$T/m1")
r1=$(metric 'weft_served_requests_total.*op="RELEASE"' meta "$T/m1")
w1=$(metric "$WRITERS" meta "$T/m1")
opens=$((o1 - o0)) releases=$((r1 - r0)) commits=$((c1 - c0)) syncs=$((s1 - s0)) writers=$((w1 - w0))
[ "$opens" -ge 1000 ] || fail "expected >= 1000 OPENs at meta, counted $opens"
[ "$releases" -ge 1000 ] || fail "expected >= 1000 RELEASEs at meta, counted $releases"
# every commit and sync in the window must come from another request that writes (the
# stores' heartbeats): none from the opens. Slack 2 (one per store): a heartbeat
# committed at the second snapshot but not yet answered (counted at its reply).
[ "$commits" -le $((writers + 2)) ] || fail "$opens opens: $commits meta commits, only $writers from other requests"
[ "$syncs" -le $((writers + 2)) ] || fail "$opens opens: $syncs meta syncs, only $writers from other requests"
ok "$opens opens+reads+releases: $commits meta commits and $syncs syncs; $writers heartbeats"

# --- the page cache kept across opens while the file is unchanged
echo 3 >/proc/sys/vm/drop_caches
cat "$MNT/small/big" >/dev/null
store_reads() { # OBJ_READs every store served
	local s=0 f
	for f in "$STATE"/store*.metrics.addr; do
		s=$((s + $(metric 'weft_served_requests_total.*op="OBJ_READ"' "$(basename "$f" .metrics.addr)")))
	done
	echo $s
}
# (up to three tries: a drop_caches by anything else on the machine empties the cache too)
for try in 1 2 3; do
	cat "$MNT/small/big" >/dev/null
	g0=$(store_reads)
	cat "$MNT/small/big" >/dev/null
	g1=$(store_reads)
	[ "$g1" = "$g0" ] && break
done
[ "$g1" = "$g0" ] || fail "a second read of an unchanged file went to the stores ($((g1 - g0)) reads)"
# changed through another mount: the next open there reads the new bytes
mkdir -p "$T/mnt2"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$T/mnt2" --key "$STATE/cluster.key" \
	-o attr_timeout=0,no_root_squash --log "$T/mount2.log"
cat "$T/mnt2/small/big" >/dev/null # cached there
head -c $((64 << 10)) /dev/urandom >"$T/big3"
cp "$T/big3" "$MNT/small/big"
sleep 0.2
cmp -s "$T/mnt2/small/big" "$T/big3" || fail "another mount's change was not seen at the next open"
umount "$T/mnt2"
ok "a hot file is read from the page cache at its next open; a changed one is not"

# --- a file unlinked while open, across a meta restart
head -c $((3 << 20)) /dev/urandom >"$T/u"
cp "$T/u" "$MNT/u"
ino=$(stat -c %i "$MNT/u")
objs() { find "$STATE"/store*/objects -name "$(printf %016x "$ino").*" ! -name '*.crc' | wc -l; }
exec 3<"$MNT/u"
rm "$MNT/u"
[ "$(objs)" -ge 1 ] || fail "no objects for the open file"
kill -9 "$(cat "$STATE/meta.pid")"
sleep 0.5
# a short session timeout: orphans nobody reclaims would be freed 4 s after the start
"$WEFT" meta "$STATE/meta" --listen "$(cat "$STATE/meta.addr")" --key "$STATE/cluster.key" \
	--pid-file "$STATE/meta.pid" --log "$STATE/logs/meta.log" --session-timeout 4 3<&- \
	|| fail "meta restart"
cat "$MNT/small/f1" >/dev/null || fail "open after the meta restart" # renews the session
n=100; while ! grep -q 'open file(s) reclaimed' "$STATE/logs/mount.log" && [ $n -gt 0 ]; do
	sleep 0.1; n=$((n - 1)); done
grep -q '1 open file(s) reclaimed' "$STATE/logs/mount.log" ||
	fail "the mount did not reclaim its open file: $(grep -i session "$STATE/logs/mount.log" | tail -3)"
sleep 8 # past the grace period and a deleter pass
[ "$(objs)" -ge 1 ] || fail "the unlinked open file lost its objects across the meta restart"
echo 3 >/proc/sys/vm/drop_caches
python3 -c '
import os, sys, hashlib
h = hashlib.sha256(); off = 0
while True:
    b = os.pread(3, 1 << 20, off)
    if not b: break
    h.update(b); off += len(b)
print(h.hexdigest())' >"$T/u.sha" || fail "read of the unlinked open file failed"
[ "$(cat "$T/u.sha")" = "$(sha "$T/u")" ] || fail "the unlinked open file read back different data"
exec 3<&-
n=150; while [ "$(objs)" -gt 0 ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ "$(objs)" = 0 ] || fail "objects of the unlinked file still there after its last close: $(objs)"
ok "an unlinked open file kept its data across a meta restart, freed at its last close"

cluster_down
