#!/usr/bin/env bash
# A full metadata disk must never wedge the file system (issue 18). meta's directory is a
# 16 MiB ext4 on a loop device, with a 1 MiB initial LMDB map (it must grow online) and
# a 2 MiB reserve. Through the mount: fill it (big xattrs first, then long-named
# creates), the first failure is ENOSPC (not EIO), reads keep working, rm -rf removes
# everything, creates work again with no restart, and a walk finds exactly the entries
# that were acknowledged. Then the same with renames on a full disk.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
# meta logs the full disk as it meets it (a commit that ran out, the reserve released)
ALLOWED_ERRORS='No space left|ENOSPC'

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

mkdir "$MNT/fill"
: >"$T/list"
err=$(python3 "$T/fill.py" "$MNT/fill" "$T/list" 150)
n=$(wc -l <"$T/list")
[ "$err" = ENOSPC ] || fail "first failure after $n files: $err (want ENOSPC)"
[ "$n" -gt 200 ] || fail "only $n files before ENOSPC"
ok "meta's disk full after $n files (150 with 60 KiB xattrs): first failure ENOSPC"

# nothing can grow now: mkdir, symlink, a new xattr all get ENOSPC, not EIO
for op in "mkdir $MNT/fill/d" "ln -s x $MNT/fill/s" "setfattr -n user.x -v 1 $MNT/fill/$(head -1 "$T/list")"; do
	if $op 2>"$T/op.err"; then fail "$op succeeded on a full meta disk"; fi
	grep -q 'No space left' "$T/op.err" || fail "$op: $(cat "$T/op.err") (want ENOSPC)"
done
[ "$(getfattr --only-values -n user.big "$MNT/fill/$(head -1 "$T/list")" | wc -c)" = 61440 ] ||
	fail "reading an xattr on a full meta disk"
ok "growing ops get ENOSPC, reads work"

"$WEFT" df --dir "$STATE" >"$T/df.out" || fail "weft df failed"
grep -q 'meta space' "$T/df.out" || fail "weft df shows no meta space: $(cat "$T/df.out")"
"$WEFT" df --dir "$STATE" --json >"$T/df.json"
python3 - "$T/df.json" <<'EOF' || fail "weft df --json: $(cat "$T/df.json")"
import json, sys
m = json.load(open(sys.argv[1]))["meta_space"]
assert m["map_bytes"] > (1 << 20), m            # grew past the 1 MiB it started with
assert m["low"] is True, m
assert m["disk_bytes"] > 0 and m["db_bytes"] > 0, m
EOF
grep -q 'LMDB map grown' "$STATE/logs/meta.log" || fail "meta logged no map growth"
[ "$(grep -c 'under the warning threshold' "$STATE/logs/meta.log")" = 1 ] ||
	fail "the space warning was not logged exactly once"
ok "weft df shows meta's space: map grown past 1 MiB online, growth refused; warned once"

walk "$MNT/fill" "$T/list"
ok "walk: every acknowledged entry is there, nothing else"

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

# renames on a full disk: each either works or gets ENOSPC; the namespace matches
: >"$T/list3"
err=$(python3 "$T/fill.py" "$MNT/again" "$T/list3" 0)
[ "$err" = ENOSPC ] || fail "second fill: $err"
cat "$T/list2" "$T/list3" >"$T/cur"
python3 - "$MNT/again" "$T/cur" >"$T/ren.out" <<'EOF' || fail "renames: $(cat "$T/ren.out")"
import errno, os, sys
d, lst = sys.argv[1], sys.argv[2]
names = open(lst).read().split()
os.mkdir(os.path.join(d, "sub")) if False else None
done = bad = 0
for i, n in enumerate(names[:400]):
    new = "r%d" % i
    try:
        os.rename(os.path.join(d, n), os.path.join(d, new))
        names[i] = new; done += 1
    except OSError as e:
        if e.errno != errno.ENOSPC:
            print("rename", n, errno.errorcode[e.errno]); sys.exit(1)
        bad += 1
open(lst, "w").write("\n".join(names) + "\n")
print("renamed", done, "refused", bad)
EOF
grep -q 'refused [1-9]' "$T/ren.out" || fail "no rename refused on a full disk: $(cat "$T/ren.out")"
walk "$MNT/again" "$T/cur"
ok "renames on the full disk: $(cat "$T/ren.out") (ENOSPC only), walk matches"
rm -rf "$MNT/again" || fail "second rm -rf failed"
touch "$MNT/last" || fail "create after the second rm"
ok "second rm -rf, create works"

cluster_down
check_logs
