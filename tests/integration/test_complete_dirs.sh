#!/usr/bin/env bash
# Complete directories (docs/ARCHITECTURE.md, "Complete directories"): mount A answers
# the lookup of an absent name in a directory it created, under its lease, without
# asking meta; mount B's changes there reach A at once all the same, and so do changes
# made after A's lease lapsed.
#
#   mount A (complete_dirs=on) ----\
#                                   meta (WEFT_META_LEASE_MS=3000) -- store
#   mount B (complete_dirs=off) ---/
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

export WEFT_META_LEASE_MS=3000
export WEFT_RUN_DIR=$T/run # the mounts' stats files
cluster_up --stores 1 --replicas 1 --metrics
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" -o complete_dirs=off,no_root_squash --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"

counter() { # counter NAME: mount A's counter (its stats file, rewritten once a second)
	sleep 1.2
	python3 -c 'import glob, json, sys
p = glob.glob(sys.argv[1] + "/mounts/*-mnt.json")
print(json.load(open(p[0]))["counters"].get(sys.argv[2], 0) if p else -1)' "$WEFT_RUN_DIR" "$1"
}
lookups() { # LOOKUPs meta served so far
	curl -s "http://$(cat "$STATE/meta.metrics.addr")/metrics" |
		awk '$0 !~ /^#/ && /weft_served_requests_total/ && /op="LOOKUP"/ {s += $NF} END {print s + 0}'
}
N=200
create_n() { # create_n DIR: mkdir DIR and N files in it, as tar does (lookup, create)
	mkdir "$1"
	for i in $(seq $N); do : >"$1/f$i"; done
}

# --- 1. N creates in a new directory: no LOOKUP from A, about N from B
l0=$(lookups); create_n "$MNT/a"; l1=$(lookups)
create_n "$B/b"; l2=$(lookups)
echo "LOOKUPs at meta for $N creates in a new directory: mount A $((l1 - l0)), mount B (complete_dirs=off) $((l2 - l1))"
[ $((l1 - l0)) -le 5 ] || fail "A sent $((l1 - l0)) LOOKUPs for $N creates in a directory it created"
[ $((l2 - l1)) -ge $N ] || fail "B (complete_dirs=off) sent only $((l2 - l1)) LOOKUPs: the test counts nothing"
[ "$(ls "$MNT/a" | wc -l)" = $N ] && [ "$(ls "$B/a" | wc -l)" = $N ] || fail "A's files, as A and B list them"
ok "$N creates in a directory A made: $((l1 - l0)) LOOKUPs (B, complete_dirs=off: $((l2 - l1)))"

# --- 1b. creates spread over twice the lease: each create's reply renews the client's
# lease on the directory, so it stays complete. Through libweft alone (cdir_probe): the
# kernel would renew it too, with the GETATTR of the directory it sends after each create.
probe() { "$BUILD/tests/integration/cdir_probe" "$(cat "$STATE/meta.addr")" "$STATE/cluster.key" "$@"; }
l0=$(lookups)
[ "$(probe p1 60 100 0)" = absent ] || fail "cdir_probe p1"
l1=$(lookups)
[ "$(probe p2 3 10 4000)" = absent ] || fail "cdir_probe p2"
l2=$(lookups)
echo "LOOKUPs for an absent name after 60 creates over 6 s: $((l1 - l0)); after a lapse: $((l2 - l1))"
[ $((l1 - l0)) -eq 0 ] || fail "60 creates over twice the lease: the directory's lease was not kept renewed"
[ $((l2 - l1)) -ge 1 ] || fail "a lookup after the lease lapsed was answered without meta"
ok "creates over twice the lease keep the directory complete; a lapse ends it"

# --- 2. B changes a directory A holds complete: A sees it at once, warm negative entries
# and all (each case in a directory of its own: the first recall ends completeness)
python3 - "$MNT" "$B" <<'PY' || fail "B's changes in A's complete directories"
import errno, os, sys
A, B = sys.argv[1], sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
def gone(p):
    try: os.stat(p); return False
    except FileNotFoundError: return True
def warm(p):                      # A's kernel caches the negative entry
    for _ in range(20): check(gone(p), "A: %s does not exist yet" % p)
for r in range(5):
    d = "c%d" % r
    for k in ("new", "ren", "unl", "excl", "dir"):
        os.mkdir("%s/%s.%s" % (A, d, k)); open("%s/%s.%s/mine" % (A, d, k), "w").close()
    # a create
    warm(A + "/%s.new/x" % d)
    open(B + "/%s.new/x" % d, "w").write("b")
    check(open(A + "/%s.new/x" % d).read() == "b", "round %d: A opens B's new file at once" % r)
    # a rename into it
    warm(A + "/%s.ren/y" % d)
    open(B + "/%s.ren.src" % d, "w").close()
    os.rename(B + "/%s.ren.src" % d, B + "/%s.ren/y" % d)
    check(not gone(A + "/%s.ren/y" % d), "round %d: A stats what B renamed in at once" % r)
    # an unlink of A's own file
    check(not gone(A + "/%s.unl/mine" % d), "A has its file")
    os.unlink(B + "/%s.unl/mine" % d)
    check(gone(A + "/%s.unl/mine" % d), "round %d: A sees B's unlink of its file at once" % r)
    # A's O_EXCL create of a name B made
    warm(A + "/%s.excl/z" % d)
    open(B + "/%s.excl/z" % d, "w").close()
    try:
        os.close(os.open(A + "/%s.excl/z" % d, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        check(False, "round %d: A's O_EXCL create of B's name succeeded" % r)
    except FileExistsError:
        pass
    # a mkdir, and a listing
    warm(A + "/%s.dir/sub" % d)
    os.mkdir(B + "/%s.dir/sub" % d)
    check(os.path.isdir(A + "/%s.dir/sub" % d), "round %d: A sees B's mkdir at once" % r)
    check(sorted(os.listdir(A + "/%s.dir" % d)) == ["mine", "sub"], "round %d: A's listing" % r)
print("ok: 5 rounds of create, rename in, unlink, O_EXCL and mkdir by B seen by A at once")
PY

# --- 3. A's own changes keep its names right: rename, unlink, link, symlink, rmdir
python3 - "$MNT" "$B" <<'PY' || fail "A's own changes in its complete directory"
import os, sys
A, B = sys.argv[1], sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
def exists(p):
    try: os.lstat(p); return True
    except FileNotFoundError: return False
d = A + "/own"
os.mkdir(d); os.mkdir(d + "/s")
open(d + "/f", "w").close()
os.rename(d + "/f", d + "/g")
check(not exists(d + "/f") and exists(d + "/g"), "rename within")
os.link(d + "/g", d + "/h"); os.symlink("g", d + "/l")
os.rename(d + "/h", d + "/s/h")             # into another complete directory
check(exists(d + "/s/h") and not exists(d + "/h"), "rename across")
os.unlink(d + "/g")
check(not exists(d + "/g") and exists(d + "/l"), "unlink, symlink")
os.unlink(d + "/s/h"); os.rmdir(d + "/s")
check(not exists(d + "/s"), "rmdir")
os.mknod(d + "/p", 0o600 | 0o010000)        # a fifo: CREATE
check(exists(d + "/p"), "mknod")
want = sorted(["l", "p"])
check(sorted(os.listdir(d)) == want and sorted(os.listdir(B + "/own")) == want,
      "A and B list %s, %s" % (sorted(os.listdir(d)), sorted(os.listdir(B + "/own"))))
print("ok: A's rename, link, symlink, mknod, unlink and rmdir keep its names right")
PY

# --- 4. after A's lease lapsed, a change B made (no recall reaches A) is seen by A, even
# once A's next create renewed a fresh lease on the directory
mkdir "$MNT/lapse"; : >"$MNT/lapse/f"
for _ in 1 2 3; do [ ! -e "$MNT/lapse/x" ] || fail "x exists"; done
sleep 4 # > the lease
: >"$B/lapse/x"
stat "$MNT/lapse/f" >/dev/null             # a LOOKUP: meta grants A a new lease, no renewal
: >"$MNT/lapse/y"                          # a create under the new lease
[ -e "$MNT/lapse/x" ] || fail "A does not see x, which B created after A's lease lapsed"
mkdir "$MNT/lapse2"
[ ! -e "$MNT/lapse2/x" ] || fail "x exists"
sleep 4
: >"$B/lapse2/x"
[ -e "$MNT/lapse2/x" ] || fail "A does not see x, which B created after A's lease lapsed (no renewal)"
ok "after A's lease lapsed, B's creates are seen by A"

# --- 5. an existing directory (B made it and its files): A's second create there claims
# it and lists it (DIR_CLAIM, READDIR), so A answers its later creates and lookups of new
# names itself; B's create there afterwards recalls the claim, and A sees that name at once
mkdir "$B/ex"
for i in $(seq 30); do echo "b$i" >"$B/ex/b$i"; done
sleep 3.5 # B's lease on ex runs out: meta claims a directory nobody else holds
l0=$(lookups)
for i in $(seq 50); do echo "a$i" >"$MNT/ex/a$i"; done
l1=$(lookups)
echo "LOOKUPs at meta for 50 creates in a directory B made: $((l1 - l0))"
[ $((l1 - l0)) -le 5 ] || fail "A sent $((l1 - l0)) LOOKUPs for 50 creates: the directory was not made complete from its listing"
python3 - "$MNT" "$B" <<'PY' || fail "an existing directory made complete from its listing"
import os, sys
A, B = sys.argv[1], sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
for i in (1, 17, 30):                      # names the listing showed: asked of meta
    check(open("%s/ex/b%d" % (A, i)).read() == "b%d\n" % i, "A reads B's file b%d" % i)
    try:
        os.close(os.open("%s/ex/b%d" % (A, i), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        check(False, "A's O_EXCL create of B's listed name b%d succeeded" % i)
    except FileExistsError:
        pass
for i in (1, 50):
    check(open("%s/ex/a%d" % (B, i)).read() == "a%d\n" % i, "B reads A's file a%d" % i)
check(not os.path.exists(A + "/ex/late"), "late does not exist yet")
open(B + "/ex/late", "w").write("late")     # recalls A's claim
try:
    os.close(os.open(A + "/ex/late", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    check(False, "A's O_EXCL create of late, which B made under A's claim, succeeded")
except FileExistsError:
    pass
check(open(A + "/ex/late").read() == "late", "A reads B's late file")
want = sorted(["b%d" % i for i in range(1, 31)] + ["a%d" % i for i in range(1, 51)] + ["late"])
check(sorted(os.listdir(A + "/ex")) == want and sorted(os.listdir(B + "/ex")) == want,
      "A and B list the same 81 names")
print("ok: listed names asked of meta, new ones answered by A, B's later create seen at once")
PY
ok "an existing directory made complete from its listing: $((l1 - l0)) LOOKUPs for 50 creates"

# --- 6. tar over an existing tree (GNU tar unlinks each file and creates it again): the
# same tree, and its creates answered by the mount
mkdir -p "$T/src/t/d1/d2"
for i in $(seq 40); do echo "one $i" >"$T/src/t/f$i"; echo "two $i" >"$T/src/t/d1/g$i"; echo "$i" >"$T/src/t/d1/d2/h$i"; done
tar cf "$T/t.tar" -C "$T/src" t
tar xf "$T/t.tar" -C "$B"                  # B makes the tree: A never held it complete
for i in $(seq 40); do echo "changed $i" >"$T/src/t/d1/g$i"; done
tar cf "$T/t2.tar" -C "$T/src" t
umount "$B"                                 # B's leases would keep A from claiming
c0=$(counter async_creates); d0=$(counter dirs_listed_complete)
tar xf "$T/t2.tar" -C "$MNT"
c1=$(counter async_creates); d1=$(counter dirs_listed_complete)
diff -r "$T/src/t" "$MNT/t" || fail "tar over an existing tree"
echo "tar over a tree of 120 files in 3 directories: $((c1 - c0)) creates answered by the mount, $((d1 - d0)) directories listed"
[ $((d1 - d0)) -ge 3 ] || fail "tar over 3 existing directories listed $((d1 - d0)) of them"
[ $((c1 - c0)) -ge 110 ] || fail "tar over a tree of 120 files: only $((c1 - c0)) creates answered by the mount"
ok "tar over an existing tree: the same bytes, $((c1 - c0)) of 120 creates answered by the mount"

check_logs
