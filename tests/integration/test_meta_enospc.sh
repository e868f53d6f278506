#!/usr/bin/env bash
# A full metadata disk must never wedge the file system (issue 18). meta's directory is a
# 16 MiB ext4 on a loop device, with a 1 MiB initial LMDB map (it must grow online) and
# a 2 MiB reserve. First another file fills that disk: creates get ENOSPC, rm -rf still
# works (on meta's reserve), and the reserve is taken again once the hog is gone. Then,
# through the mount, four fillers at once fill it (big xattrs first, then long-named
# creates): each one's first failure is ENOSPC (not EIO), reads keep working, renames get ENOSPC or work, a walk
# finds exactly the entries that were acknowledged, rm -rf removes everything, and
# creates work again with the same meta process.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
# meta logs the full disk as it meets it (a commit that ran out, the reserve released)
ALLOWED_ERRORS='No space left|ENOSPC'
ok() { echo "ok (${SECONDS} s): $*"; }

LOOPDEV=""
eval "$(declare -f pre_cleanup | sed '1s/pre_cleanup/cluster_pre_cleanup/')"
pre_cleanup() {
	cluster_pre_cleanup
	mountpoint -q "$STATE/meta" 2>/dev/null && { umount "$STATE/meta" || umount -l "$STATE/meta"; }
	[ -n "$LOOPDEV" ] && losetup -d "$LOOPDEV" 2>/dev/null
	return 0
}

mkdir -p "$STATE/meta"
truncate -s 16M "$T/meta.img"
mkfs.ext4 -q -F -O ^has_journal -m 0 "$T/meta.img" || fail "mkfs.ext4"
LOOPDEV=$(losetup -f --show "$T/meta.img" 2>/dev/null) || { echo "skip: no loop device"; exit 77; }
mount "$LOOPDEV" "$STATE/meta" || fail "cannot mount $LOOPDEV"
rmdir "$STATE/meta/lost+found"

export WEFT_META_MAPSIZE=$((1 << 20)) WEFT_META_RESERVE=2M WEFT_META_SPACE_WARN=4M
cluster_up --stores 1 --replicas 1
METAPID=$(cat "$STATE/meta.pid")
ok "weft up with meta on a 16 MiB ext4 (1 MiB initial map, 2 MiB reserve)"
[ "$(stat -c %b "$STATE/meta/space.reserve")" -ge 4096 ] || fail "no 2 MiB reserve file"

# fill.py DIR LIST XATTR_FILES: creates DIR/<long name>.N, the first XATTR_FILES with a
# 60 KiB xattr, until something fails; appends each acknowledged name to LIST and prints
# the errno name of the first failure.
cat >"$T/fill.py" <<'EOF'
import errno, os, sys
d, lst, nx = sys.argv[1], sys.argv[2], int(sys.argv[3])
pad = "n" * 230
val = os.urandom(60 << 10)
with open(lst, "a") as out:
    i = 0
    while True:
        name = "%s.%06d" % (pad, i)
        p = os.path.join(d, name)
        try:
            os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except OSError as e:
            print(errno.errorcode[e.errno]); break
        out.write(name + "\n")
        if i < nx:
            try:
                os.setxattr(p, "user.big", val)
            except OSError as e:
                print(errno.errorcode[e.errno]); break
        i += 1
        if i > 200000:
            print("NOFAIL"); break
EOF

# walk DIR LIST: the names under DIR are exactly those in LIST
walk() {
	(cd "$1" && find . -mindepth 1 -printf '%P\n' | sort) >"$T/found"
	sort -u "$2" >"$T/want"
	cmp -s "$T/found" "$T/want" || fail "walk of $1: $(diff "$T/want" "$T/found" | head -5) ($(wc -l <"$T/found") found, $(wc -l <"$T/want") acknowledged)"
}

# 1. something else fills meta's disk: deletes go on, on the reserve
mkdir "$MNT/pre"
: >"$T/list0"
for i in $(seq 300); do echo "p$i" >>"$T/list0"; done
(cd "$MNT/pre" && xargs touch <"$T/list0") || fail "creates before the hog"
dd if=/dev/zero of="$STATE/meta/hog" bs=64k 2>/dev/null || true
dd if=/dev/zero of="$STATE/meta/hog2" bs=1k 2>/dev/null || true
sync
[ "$(stat -f -c %a "$STATE/meta")" -lt 8 ] || fail "the hog did not fill meta's disk"
for i in $(seq 20); do touch "$MNT/pre/x" 2>"$T/op.err" || break; rm -f "$MNT/pre/x"; sleep 0.1; done
grep -q 'No space left' "$T/op.err" || fail "create with meta's disk full: $(cat "$T/op.err") (want ENOSPC)"
rm -rf "$MNT/pre" || fail "rm -rf with meta's disk full (the reserve is for that)"
grep -q 'released the 2.0 MiB reserve' "$STATE/logs/meta.log" || fail "the reserve was not used"
ok "another file filled meta's disk: create gets ENOSPC, rm -rf works on the reserve"
rm -f "$STATE/meta/hog" "$STATE/meta/hog2"
for i in $(seq 50); do touch "$MNT/y" 2>/dev/null && break; sleep 0.1; done
rm -f "$MNT/y" || fail "creates did not come back after the hog went"
grep -q 'reserve for deletes taken again' "$STATE/logs/meta.log" || fail "the reserve was not taken again"
ok "hog removed: the reserve is taken again, creates work"

# 2. meta's database fills the disk
LOGSTART=$(($(wc -l <"$STATE/logs/meta.log") + 1))
# four fillers at once, so that batches hold several ops and the disk may fill under
# a commit (the redo without growing ops), not only at the gate
mkdir "$MNT/fill"
fpids=()
for k in a b c d; do
	mkdir "$MNT/fill/$k"; : >"$T/list.$k"
	python3 "$T/fill.py" "$MNT/fill/$k" "$T/list.$k" 40 >"$T/err.$k" & fpids+=($!)
done
wait "${fpids[@]}"
: >"$T/list"
for k in a b c d; do
	[ "$(cat "$T/err.$k")" = ENOSPC ] || fail "filler $k: first failure $(cat "$T/err.$k") (want ENOSPC)"
	sed "s|^|$k/|" "$T/list.$k" >>"$T/list"
done
n=$(wc -l <"$T/list")
[ "$n" -gt 200 ] || fail "only $n files before ENOSPC"
printf '%s\n' a b c d >>"$T/list"
ok "meta's disk full after $n files (160 with 60 KiB xattrs) by 4 fillers: each one's first failure ENOSPC"

# nothing can grow now: mkdir, symlink, a new xattr all get ENOSPC, not EIO
for op in "mkdir $MNT/fill/newdir" "ln -s x $MNT/fill/newlink" "setfattr -n user.x -v 1 $MNT/fill/a/$(head -1 "$T/list.a")"; do
	if $op 2>"$T/op.err"; then fail "$op succeeded on a full meta disk"; fi
	grep -q 'No space left' "$T/op.err" || fail "$op: $(cat "$T/op.err") (want ENOSPC)"
done
[ "$(getfattr --absolute-names --only-values -n user.big "$MNT/fill/a/$(head -1 "$T/list.a")" | wc -c)" = 61440 ] ||
	fail "reading an xattr on a full meta disk"
ok "growing ops get ENOSPC, reads work"

"$WEFT" df --dir "$STATE" >"$T/df.out" || fail "weft df failed"
grep -q 'meta space: .*FULL' "$T/df.out" || fail "weft df shows no full meta space: $(cat "$T/df.out")"
"$WEFT" status --dir "$STATE" | grep -q 'meta space: .*reserve' || fail "weft status shows no meta space"
"$WEFT" status --dir "$STATE" --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["meta_space"]["low"] is True' ||
	fail "weft status --json: no meta_space"
sed -n '$p' "$T/df.out"
"$WEFT" df --dir "$STATE" --json >"$T/df.json"
python3 - "$T/df.json" <<'EOF' || fail "weft df --json: $(cat "$T/df.json")"
import json, sys
m = json.load(open(sys.argv[1]))["meta_space"]
assert m["map_bytes"] > (1 << 20), m            # grew past the 1 MiB it started with
assert m["low"] is True, m
assert m["disk_bytes"] > 0 and m["db_bytes"] > 0, m
EOF
grep -q 'LMDB map grown' "$STATE/logs/meta.log" || fail "meta logged no map growth"
[ "$(tail -n +$LOGSTART "$STATE/logs/meta.log" | grep -c 'under the warning threshold')" = 1 ] ||
	fail "the space warning was not logged exactly once"
ok "weft df shows meta's space: map grown past 1 MiB online, growth refused; warned once"

walk "$MNT/fill" "$T/list"
ok "walk: every acknowledged entry is there, nothing else"

# renames on the full disk: each works or gets ENOSPC; the walk follows
python3 - "$MNT/fill" "$T/list" >"$T/ren.out" <<'EOF' || fail "renames: $(cat "$T/ren.out")"
import errno, os, sys
d, lst = sys.argv[1], sys.argv[2]
names = open(lst).read().split()
done = bad = 0
for i, n in enumerate(names[:100]):
    try:
        os.rename(os.path.join(d, n), os.path.join(d, "r%d" % i))
        names[i] = "r%d" % i; done += 1
    except OSError as e:
        if e.errno != errno.ENOSPC:
            print("rename", n, errno.errorcode[e.errno]); sys.exit(1)
        bad += 1
open(lst, "w").write("\n".join(names) + "\n")
print("renamed", done, "refused", bad)
EOF
grep -q 'refused [1-9]' "$T/ren.out" || fail "no rename refused on a full disk: $(cat "$T/ren.out")"
walk "$MNT/fill" "$T/list"
ok "renames on the full disk: $(cat "$T/ren.out") (ENOSPC only), walk matches"

rm -rf "$MNT/fill" || fail "rm -rf on a full meta disk failed"
[ -z "$(ls -A "$MNT")" ] || fail "rm -rf left: $(ls -A "$MNT" | head -3)"
ok "rm -rf on the full disk removed all $n files"

mkdir "$MNT/again"
: >"$T/list2"
for i in $(seq 300); do echo "f$i" >>"$T/list2"; done
(cd "$MNT/again" && xargs touch <"$T/list2") || fail "creates after rm failed"
walk "$MNT/again" "$T/list2"
[ "$(cat "$STATE/meta.pid")" = "$METAPID" ] && kill -0 "$METAPID" || fail "meta restarted"
ok "creates work again after rm, same meta process"

cluster_down
check_logs
