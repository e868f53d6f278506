#!/usr/bin/env bash
# Close-behind (docs/ARCHITECTURE.md "Metadata durability"): on mount A (wb_attrs), the
# close of a file A created returns before the file's data reaches the stores. Shown
# with every store stopped (SIGSTOP): the close returns at once, where a close that
# waits would hang. Mount B's stat and read of that file, started while the stores are
# still stopped, must give the size and bytes A wrote (meta recalls A, whose flush
# finishes once the stores run again). A with sync_close waits as before. weft sync
# returns once everything closed is at the stores and meta. A tar extraction
# unmounted at once (the kernel drops the RELEASEs it has not delivered) is whole
# after weft down / weft up. Creating files costs no GETATTR at meta (the file's from
# A's own knowledge, the directory's from CREATE_OPEN's reply), and A's view of the
# directory equals B's, also after B creates in it. A's renames and unlinks return at
# once with every store stopped (they do not wait for the flushes behind closes), and
# a buffered chown reaches meta before an unlink in a sticky directory that needs it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

export WEFT_UP_MOUNT_OPTS=wb_attrs
cluster_up --stores 2 --replicas 1 --metrics
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" -o no_root_squash --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"
mkdir "$MNT/d"
head -c 300000 /dev/urandom >"$T/pattern"

stores() { for p in "$STATE"/store*.pid; do kill "-$1" "$(cat "$p")"; done; }

# 1. close with every store stopped
stores STOP
python3 - "$MNT/d/f" "$T/pattern" <<'PY' || { stores CONT; fail "close behind stopped stores"; }
import os, sys, time
data = open(sys.argv[2], "rb").read()
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
os.write(fd, data)
os.fchmod(fd, 0o604)
t = time.monotonic()
os.close(fd)
took = time.monotonic() - t
print("close took %.3f s" % took)
sys.exit(0 if took < 1.0 else 1)
PY
ok "close of a new file returned with every store stopped"

# 2. B asks while the stores are still stopped: its answer waits for A's flush
( stat -c '%s %a' "$B/d/f" >"$T/bstat"; cmp "$T/pattern" "$B/d/f" && echo same >"$T/bcmp" ) &
BPID=$!
sleep 1.5
[ -s "$T/bstat" ] && { stores CONT; fail "B was answered before A's data reached the stores: $(cat "$T/bstat")"; }
stores CONT
wait $BPID || fail "B's stat or read failed"
[ "$(cat "$T/bstat")" = "300000 604" ] || fail "B saw '$(cat "$T/bstat")', not '300000 604'"
[ -s "$T/bcmp" ] || fail "B read other bytes than A wrote"
ok "B's stat and read, made while the stores were stopped, waited and saw A's size, mode and bytes"

# 3. with sync_close the close waits for the stores
umount "$MNT"
for i in $(seq 50); do [ -z "$(pgrep -f "weft mount.*$MNT " || true)" ] && break; sleep 0.1; done
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$MNT" -o no_root_squash,wb_attrs,sync_close \
	--key "$STATE/cluster.key" --pid-file "$T/mount3.pid" --log "$T/mount3.log"
stores STOP
python3 - "$MNT/d/g" <<'PY' >"$T/sync_close.out" &
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640)
os.write(fd, b"z" * 5000)
t = time.monotonic()
os.close(fd)
print("%.3f" % (time.monotonic() - t))
PY
CPID=$!
sleep 1.5
[ -s "$T/sync_close.out" ] && { stores CONT; fail "close with sync_close returned while the stores were stopped"; }
stores CONT
wait $CPID || fail "close with sync_close failed"
[ "$(stat -c %s "$B/d/g")" = 5000 ] || fail "g: wrong size on B"
ok "with sync_close the close waited for the stores ($(cat "$T/sync_close.out") s)"
umount "$MNT"
for i in $(seq 50); do [ -z "$(pgrep -f "weft mount.*$MNT " || true)" ] && break; sleep 0.1; done
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$MNT" -o no_root_squash,wb_attrs,allow_other \
	--key "$STATE/cluster.key" --pid-file "$T/mount4.pid" --log "$T/mount4.log"

# 4. weft sync: everything closed is at the stores and at meta when it returns
mkdir "$MNT/s"
for i in $(seq 100); do head -c $((i * 97)) "$T/pattern" >"$MNT/s/f$i"; done
"$WEFT" sync "$MNT" || fail "weft sync"
for i in 1 50 100; do
	cmp <(head -c $((i * 97)) "$T/pattern") "$B/s/f$i" || fail "s/f$i differs on B after weft sync"
done
ok "weft sync after 100 closes: B reads every file"

# 5. no GETATTR at meta for creating, writing and chown'ing files, nor for unlinking
# them, and A's directory attributes are meta's
getattrs() {
	curl -s "http://$(cat "$STATE/meta.metrics.addr")/metrics" |
		awk '$0 !~ /^#/ && /weft_served_requests_total/ && /op="GETATTR"/ {s += $NF} END {print s + 0}'
}
mkdir "$MNT/g"
stat "$MNT/g" >/dev/null
g0=$(getattrs)
python3 - "$MNT/g" <<'PY' || fail "creating 200 files"
import os, sys
for i in range(200):
    fd = os.open("%s/f%d" % (sys.argv[1], i), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"q" * 3000)
    os.fchown(fd, 1000, 1000)
    os.fchmod(fd, 0o644)
    os.close(fd)
PY
g1=$(getattrs)
[ $((g1 - g0)) -le 20 ] || fail "200 creates sent $((g1 - g0)) GETATTRs to meta"
sa=$(stat -c '%Y %Z %s %h' "$MNT/g"); sb=$(stat -c '%Y %Z %s %h' "$B/g")
[ "$sa" = "$sb" ] || fail "directory attributes: A says '$sa', B (meta) '$sb'"
sleep 1.1
touch "$B/g/fromB"
sa=$(stat -c '%Y %Z %s %h' "$MNT/g"); sb=$(stat -c '%Y %Z %s %h' "$B/g")
[ "$sa" = "$sb" ] || fail "after B's create: A says '$sa', B (meta) '$sb'"
ok "200 creates with writes and chowns: $((g1 - g0)) GETATTRs at meta; A's directory attributes equal meta's, also after B's create"
stat "$MNT/g" >/dev/null
g0=$(getattrs)
rm -f "$MNT"/g/f1*                         # 111 unlinks
g1=$(getattrs)
[ $((g1 - g0)) -le 15 ] || fail "111 unlinks sent $((g1 - g0)) GETATTRs to meta"
sa=$(stat -c '%Y %Z %s %h' "$MNT/g"); sb=$(stat -c '%Y %Z %s %h' "$B/g")
[ "$sa" = "$sb" ] || fail "after the unlinks: A says '$sa', B (meta) '$sb'"
[ "$(ls "$MNT/g" | wc -l)" = 90 ] && [ "$(ls "$B/g" | wc -l)" = 90 ] || fail "after the unlinks: not 90 names left"
ok "111 unlinks: $((g1 - g0)) GETATTRs at meta; A's directory attributes equal meta's"

# 5b. unlink and rename do not wait for the flushes behind closes (files whose flush is
# pending stay open at meta, so removing a name only orphans them): with every store
# stopped, A writes files, renames one over another (sed -i, rsync), unlinks a scratch
# file, and each returns at once; once the stores run, B sees the renamed file's bytes
# and mode, weft sync reports nothing, and no object of the removed files is left
mkdir "$MNT/rn"
head -c 7000 "$T/pattern" >"$MNT/rn/old"
"$WEFT" sync "$MNT" || fail "weft sync before 5b"
objects() { find "$STATE" -path '*objects/*' -type f ! -name '*.crc' ! -name '*.segs' | wc -l; }
n0=$(objects)
stores STOP
timeout 30 python3 - "$MNT/rn" "$T/pattern" <<'PY' || { stores CONT; fail "unlink and rename behind closes"; }
import os, sys, time
d, data = sys.argv[1], open(sys.argv[2], "rb").read()
worst = 0.0
for i in range(20):
    tmp = os.path.join(d, ".new.%d" % i)
    with open(tmp, "wb") as f:
        f.write(data[: 1000 + i])
        os.fchmod(f.fileno(), 0o640)
    t = time.monotonic()
    os.rename(tmp, os.path.join(d, "old"))          # replaces the last one
    scratch = os.path.join(d, "scratch%d" % i)
    with open(scratch, "wb") as f:
        f.write(b"s" * 3000)
    os.unlink(scratch)
    worst = max(worst, time.monotonic() - t)
print("slowest rename + scratch file + unlink: %.1f ms" % (worst * 1000))
sys.exit(0 if worst < 1.0 else 1)
PY
stores CONT
"$WEFT" sync "$MNT" || fail "weft sync after renames and unlinks behind closes"
[ "$(stat -c '%s %a' "$B/rn/old")" = "1019 640" ] || fail "B sees rn/old as '$(stat -c '%s %a' "$B/rn/old")', not '1019 640'"
cmp <(head -c 1019 "$T/pattern") "$B/rn/old" || fail "rn/old on B: other bytes"
[ "$(ls -A "$B/rn")" = old ] || fail "B lists rn: $(ls -A "$B/rn" | tr '\n' ' ')"
for _ in $(seq 50); do # the replaced and unlinked files' objects go after their flushes
	n=$(objects)
	[ "$n" -eq "$n0" ] && break
	sleep 0.2
done
[ "$n" -eq "$n0" ] || fail "$n object files on the stores after the renames and unlinks, $n0 before"
ok "20 renames over a file and 20 unlinks of scratch files returned at once with every store stopped; B reads the last file, weft sync reports nothing, no object left behind"

# 5c. a buffered chown still reaches meta before an unlink, whose sticky-directory check
# reads the owner: root gives a file in a 1777 directory to uid 2002 and keeps it open
# (its attributes stay buffered), and uid 2002 removes it
chmod 755 "$T" "$MNT"
mkdir "$MNT/sticky" && chmod 1777 "$MNT/sticky"
python3 - "$MNT/sticky/given" <<'PY' || fail "an unlink that depends on a buffered chown"
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"mine now")
os.fchown(fd, 2002, 2002)
rm = subprocess.run(["setpriv", "--reuid=2002", "--regid=2002", "--clear-groups",
                     "rm", "-f", sys.argv[1]], capture_output=True, text=True)
os.close(fd)
if rm.returncode != 0:
    print("FAIL: uid 2002 could not remove the file root gave it:", rm.stderr.strip())
    sys.exit(1)
PY
[ ! -e "$B/sticky/given" ] || fail "B still sees sticky/given"
ok "a buffered chown went to meta before the unlink that depends on it (sticky directory)"

# 6. a tree extracted and unmounted at once is whole after weft down / weft up
SRC=$T/src
mkdir -p "$SRC"
for d in $(seq 8); do
	mkdir "$SRC/d$d"
	for i in $(seq 40); do head -c $(( (d * 40 + i) * 13 )) "$T/pattern" >"$SRC/d$d/f$i"; done
done
tar -C "$SRC" -cf "$T/src.tar" .
mkdir "$MNT/x"
tar -C "$MNT/x" -xf "$T/src.tar" || fail "tar x"
umount "$B"
mpid=$(cat "$T/mount4.pid")
umount "$MNT"
# umount(2) returns before the mount process ends: it flushes what closes left behind
# first (this mount is the test's, not weft up's, so weft down does not wait for it)
for i in $(seq 300); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$mpid" 2>/dev/null && fail "the mount process still runs 30 s after umount"
cluster_down
cluster_up --stores 2 --replicas 1
diff -r "$SRC" "$MNT/x" || fail "the tree unmounted right after tar x differs after weft down / up"
ok "tar x of 320 files, unmounted at once: whole after weft down / weft up"
check_logs
