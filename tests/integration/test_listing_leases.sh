#!/usr/bin/env bash
# Leases from a listing (docs/ARCHITECTURE.md, "Coherence"): READDIRPLUS grants the
# lister a lease on each entry, so the kernel keeps a listing's names and attributes as
# it keeps a LOOKUP's. Mount B lists a directory mount A filled; B's stat and open of
# every listed file then cost no LOOKUP or GETATTR at meta. And B's caches stay
# coherent: A's chmod, rename, unlink and rewrite of listed files are seen by B's next
# stat or read at once, through recalls of the leases the listing took.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

export WEFT_RUN_DIR=$T/run # the mounts' stats files

cluster_up --stores 1 --replicas 1 --metrics
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" -o no_root_squash --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"
served() { # served OP: requests of OP meta has served
	curl -s "http://$(cat "$STATE/meta.metrics.addr")/metrics" |
		awk -v op="op=\"$1\"" '$0 !~ /^#/ && /weft_served_requests_total/ && index($0, op) {s += $NF}
			END {print s + 0}'
}

mkdir "$MNT/L"
for i in $(seq 0 59); do printf 'file %d\n' "$i" >"$MNT/L/f$i"; done
"$WEFT" sync "$MNT" >/dev/null

# 1. B's `ls -l` (a listing and an lstat of each entry), then stat and read of the 60
# files, ask meta for no name or attr beyond the listing
l0=$(served LOOKUP) g0=$(served GETATTR) o0=$(served OPEN) r0=$(served READDIR)
ls -l "$B/L" >/dev/null
for i in $(seq 0 59); do
	stat -c %s "$B/L/f$i" >/dev/null
	[ "$(cat "$B/L/f$i")" = "file $i" ] || fail "B read f$i wrong"
done
l1=$(served LOOKUP) g1=$(served GETATTR) o1=$(served OPEN) r1=$(served READDIR)
[ $((o1 - o0)) -ge 60 ] || fail "the counters missed B's opens ($((o1 - o0)))"
[ $((r1 - r0)) -ge 1 ] || fail "the counters missed B's listing"
[ $((l1 - l0)) -le 3 ] || fail "ls -l, stat and read of 60 files sent $((l1 - l0)) LOOKUPs to meta"
[ $((g1 - g0)) -le 3 ] || fail "ls -l, stat and read of 60 files sent $((g1 - g0)) GETATTRs to meta"
ok "B's ls -l, stat and read of 60 files: $((r1 - r0)) READDIRs, $((l1 - l0)) LOOKUPs, $((g1 - g0)) GETATTRs at meta"

# 2. what A changes in files B has only listed (never opened: no lease of an open), B
# sees at once
mkdir "$MNT/M"
for i in $(seq 0 39); do printf 'file %d\n' "$i" >"$MNT/M/g$i"; done
"$WEFT" sync "$MNT" >/dev/null
python3 - "$MNT/M" "$B/M" <<'PY' || fail "coherence of a listing"
import os, sys
A, B = sys.argv[1], sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
def gone(p):
    try: os.stat(p); return False
    except FileNotFoundError: return True
for r in range(5):
    base = 8 * r
    names = os.listdir(B)                            # READDIRPLUS: names and attributes
    for n in range(base, base + 8):
        check(os.stat(B + "/g%d" % n).st_size == len("file %d\n" % n), "B's stat of g%d" % n)
    os.chmod(A + "/g%d" % base, 0o600)
    check(os.stat(B + "/g%d" % base).st_mode & 0o777 == 0o600, "round %d: chmod on A seen by B" % r)
    os.rename(A + "/g%d" % (base + 1), A + "/moved%d" % r)
    check(gone(B + "/g%d" % (base + 1)), "round %d: rename on A: B's old name gone at once" % r)
    check(not gone(B + "/moved%d" % r), "round %d: rename on A: B sees the new name" % r)
    os.unlink(A + "/g%d" % (base + 2))
    check(gone(B + "/g%d" % (base + 2)), "round %d: unlink on A seen by B at once" % r)
    os.chmod(A + "/g%d" % (base + 4), 0o640)
    check(os.stat(B + "/g%d" % (base + 4)).st_mode & 0o777 == 0o640,
          "round %d: chmod on A seen by B (no other change in between)" % r)
    want = "rewritten, longer than before %d\n" % r
    with open(A + "/g%d" % (base + 3), "w") as f: f.write(want)
    check(os.stat(B + "/g%d" % (base + 3)).st_size == len(want), "round %d: B's size of the rewrite" % r)
    with open(B + "/g%d" % (base + 3)) as f: got = f.read()
    check(got == want, "round %d: B reads A's rewrite at once (got %r)" % (r, got))
print("ok: chmod, rename, unlink and rewrite on A of files B listed: seen by B at once (5 rounds)")
PY
ok "A's changes to files B listed are seen by B at once"

# 3. directory read-ahead: B's traversal is answered in part from listings of
# subdirectories fetched ahead; what A changes in them afterwards, B's next listing shows
mkdir "$MNT/T"
for d in $(seq 0 9); do
	mkdir "$MNT/T/d$d"
	for i in $(seq 0 4); do echo "$d $i" >"$MNT/T/d$d/f$i"; done
done
"$WEFT" sync "$MNT" >/dev/null
hits() { # the dir_ahead_hits counter of B's stats file, or of A's with "mnt" (-1: none)
	sleep 1.2 # the file is rewritten once a second
	python3 -c 'import glob, json, sys
p = glob.glob(sys.argv[1] + "/mounts/*-" + sys.argv[2] + ".json")
print(json.load(open(p[0]))["counters"].get("dir_ahead_hits", 0) if p else -1)' "$WEFT_RUN_DIR" "${1:-mnt2}"
}
h0=$(hits)
find "$B/T" >"$T/find1"
h1=$(hits)
[ "$h0" -ge 0 ] || fail "no stats file of B's mount found"
[ "$((h1 - h0))" -ge 3 ] || fail "B's traversal of 10 directories took $((h1 - h0)) listings from read-ahead"
[ "$(grep -c /f "$T/find1")" = 50 ] || fail "B's find saw $(grep -c /f "$T/find1") files, not 50"
ls "$B/T" >/dev/null # listings of d0..d9 read ahead again, kept: B has not listed them
sleep 0.5
echo new >"$MNT/T/d3/new"
rm "$MNT/T/d5/f0"
mv "$MNT/T/d7/f1" "$MNT/T/d8/moved"
[ -e "$B/T/d3/new" ] || fail "B does not see a file A created in a directory B listed"
ls "$B/T/d3" | grep -qx new || fail "B's listing misses a file A created: $(ls "$B/T/d3")"
ls "$B/T/d5" | grep -qx f0 && fail "B's listing still shows a file A removed"
ls "$B/T/d7" | grep -qx f1 && fail "B's listing still shows a file A moved away"
ls "$B/T/d8" | grep -qx moved || fail "B's listing misses a file A moved in"
find "$B/T" -type f | sort >"$T/find2"
find "$MNT/T" -type f | sed "s|^$MNT|$B|" | sort >"$T/find3"
cmp -s "$T/find2" "$T/find3" || fail "B's traversal differs from A's: $(diff "$T/find2" "$T/find3" | head -5)"
ok "B's traversal took $((h1 - h0)) of 11 listings from read-ahead; A's changes after it are seen at once"

# 5. 70 listings read side by side, a few entries at a time, each in batches of the
# kernel's size from meta's batch kept in its handle: every listing shows each name once.
python3 - "$MNT/S" <<'PY' || fail "listings read side by side lost or repeated names"
import os, sys
top = sys.argv[1]
os.mkdir(top)
dirs = [os.path.join(top, "d%02d" % k) for k in range(70)]
for d in dirs:
    os.mkdir(d)
    for i in range(230):
        open(os.path.join(d, "entry-with-a-longer-name-%04d" % i), "w").close()
its = [(d, os.scandir(d)) for d in dirs]
seen = {d: [] for d in dirs}
while its:
    for d, it in list(its):
        e = next(it, None)
        if e is None:
            its.remove((d, it))
            continue
        seen[d].append(e.name)
want = sorted("entry-with-a-longer-name-%04d" % i for i in range(230))
bad = [d for d in dirs if sorted(seen[d]) != want]
if bad:
    print("%s: %d names, %d distinct" % (bad[0], len(seen[bad[0]]), len(set(seen[bad[0]]))))
    sys.exit(1)
PY
ok "70 listings read side by side: every name once"

# 6. Listings read ahead on the mount that changes them. A lists U, which reads the
# listings of its subdirectories ahead; A's own changes in them after that (a create,
# an unlink, a mkdir, an rmdir, a chmod, all answered by the mount and sent behind) are
# in A's next listings (the create was not: create_gen). Then A's rm -rf of a tree, and
# a directory of 300 names listed from read-ahead, each name once.
mkdir -p "$MNT/U"
for d in 0 1 2 3 4; do mkdir -p "$MNT/U/s$d/sub"; echo "$d" >"$MNT/U/s$d/f"; done
"$WEFT" sync "$MNT" >/dev/null
for d in 0 1 2 3 4; do : >"$MNT/U/s$d/pre"; done # claimed: A answers what follows
sleep 0.5 # meta leases what is no longer busy with A's creates
ls "$MNT/U" >/dev/null
sleep 0.5 # read ahead: the listings of s0..s4
: >"$MNT/U/s0/new" # each listing is checked before the next change
[ "$(ls "$MNT/U/s0" | tr '\n' ' ')" = "f new pre sub " ] || fail "A's listing misses the file A created: $(ls "$MNT/U/s0")"
rm "$MNT/U/s1/f"
[ "$(ls "$MNT/U/s1" | tr '\n' ' ')" = "pre sub " ] || fail "A's listing shows the file A removed: $(ls "$MNT/U/s1")"
mkdir "$MNT/U/s2/made"
[ "$(ls "$MNT/U/s2" | tr '\n' ' ')" = "f made pre sub " ] || fail "A's listing misses the directory A made: $(ls "$MNT/U/s2")"
rmdir "$MNT/U/s3/sub"
[ "$(ls "$MNT/U/s3" | tr '\n' ' ')" = "f pre " ] || fail "A's listing shows the directory A removed: $(ls "$MNT/U/s3")"
chmod 600 "$MNT/U/s4/f"
[ "$(ls -l "$MNT/U/s4" | awk '$NF == "f" {print $1}')" = "-rw-------" ] ||
	fail "A's listing shows the old mode of a file A changed: $(ls -l "$MNT/U/s4")"
names300() { # 300 empty files with long names in $1
	python3 -c 'import os, sys
for i in range(300): open(os.path.join(sys.argv[1], "a-longer-name-of-an-entry-%04d" % i), "w").close()' "$1"
}
mkdir "$MNT/R"
for d in $(seq 0 19); do
	mkdir -p "$MNT/R/d$d/e"
	for i in 0 1 2; do echo "$i" >"$MNT/R/d$d/f$i"; done
	echo x >"$MNT/R/d$d/e/g"
done
names300 "$MNT/R/d0/e"
"$WEFT" sync "$MNT" >/dev/null
sleep 0.5
h0=$(hits mnt)
rm -rf "$MNT/R"
h1=$(hits mnt)
[ -e "$MNT/R" ] && fail "rm -rf left $MNT/R"
[ -e "$B/R" ] && fail "B still sees R after A's rm -rf"
mkdir -p "$MNT/P/big"
names300 "$MNT/P/big"
"$WEFT" sync "$MNT" >/dev/null
sleep 0.5
ls "$MNT/P" >/dev/null
sleep 0.5
h2=$(hits mnt)
n=$(ls "$MNT/P/big" | sort -u | wc -l)
h3=$(hits mnt)
[ "$n" = 300 ] || fail "a listing read ahead, in pieces, showed $n distinct names of 300"
[ "$((h3 - h2))" -ge 1 ] || fail "the listing of P/big did not come from read-ahead"
ok "A's own changes are in A's listings read ahead; its rm -rf took $((h1 - h0)) listings from read-ahead"

umount "$B"
cluster_down
