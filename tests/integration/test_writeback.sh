#!/usr/bin/env bash
# Attribute write-back (mount option wb_attrs, docs/ARCHITECTURE.md "Metadata
# durability"): mount A (wb_attrs) keeps the chmod, chown and utimes of files it created
# while they are open; mount B (plain) must see them at once (its stat recalls A while
# A holds the file open) and after A's close, a change B makes
# while A buffers must be ordered after A's (the recall flushes A first), a rename or
# unlink on A after a buffered chmod must behave, a refused setattr must fail, and after
# weft down / weft up and a tar -p extraction every mode, owner, time and size must be
# as set.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

export WEFT_UP_MOUNT_OPTS=wb_attrs
cluster_up --stores 1 --replicas 1
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" -o no_root_squash --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"
mkdir "$MNT/d"
chmod 777 "$MNT/d"
chmod a+x "$T" # uid 4242 goes through it below

python3 - "$MNT/d" "$B/d" <<'PY' || fail "write-back between two mounts"
import os, sys
A, B = sys.argv[1], sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)
T1, T2 = 1600000000123456789, 1500000000987654321

# tar's order: write, utimes, chown, chmod through the descriptor, then close
for i in range(50):
    p = A + "/t%d" % i
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"x" * (i * 100))
    os.utime(fd, ns=(T2 + i, T1 + i))
    os.fchown(fd, 1000 + i, 2000 + i)
    os.fchmod(fd, 0o4750 if i % 2 else 0o644)
    st = os.fstat(fd)                                   # A's own view: the buffered state
    check(st.st_mode & 0o7777 == (0o4750 if i % 2 else 0o644), "A's fstat sees its chmod")
    check((st.st_uid, st.st_gid) == (1000 + i, 2000 + i), "A's fstat sees its chown")
    check(st.st_mtime_ns == T1 + i, "A's fstat sees its utimes (%d)" % st.st_mtime_ns)
    os.close(fd)
    sb = os.stat(B + "/t%d" % i)                        # B, right after A's close
    check(sb.st_mode & 0o7777 == (0o4750 if i % 2 else 0o644),
          "file %d: B sees A's mode after close (%o)" % (i, sb.st_mode))
    check((sb.st_uid, sb.st_gid) == (1000 + i, 2000 + i), "file %d: B sees A's owner" % i)
    check(sb.st_mtime_ns == T1 + i and sb.st_atime_ns == T2 + i,
          "file %d: B sees A's times (%d)" % (i, sb.st_mtime_ns))
    check(sb.st_size == i * 100, "file %d: B sees the size" % i)
print("ok: 50 files: A's buffered utimes/chown/chmod seen by A at once and by B after close")

# B's stat while A still holds the file open: meta recalls A, which sends what it
# buffered before B is answered
for i in range(20):
    p = A + "/o%d" % i
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"y" * 1000)
    os.utime(fd, ns=(T2, T1 + i))
    os.fchown(fd, 3000 + i, 4000 + i)
    os.fchmod(fd, 0o640)
    sb = os.stat(B + "/o%d" % i)
    check(sb.st_mode & 0o7777 == 0o640 and (sb.st_uid, sb.st_gid) == (3000 + i, 4000 + i),
          "file %d: B's stat while A holds it open sees A's chmod/chown (%o %d %d)" %
          (i, sb.st_mode, sb.st_uid, sb.st_gid))
    check(sb.st_mtime_ns == T1 + i, "file %d: B's stat sees A's utimes (%d)" % (i, sb.st_mtime_ns))
    os.fchmod(fd, 0o604)                                 # after the recall: sent at once
    check(os.stat(B + "/o%d" % i).st_mode & 0o777 == 0o604, "file %d: B sees A's next chmod" % i)
    os.close(fd)
    check(os.stat(B + "/o%d" % i).st_size == 1000, "file %d: B sees the size after close" % i)
print("ok: 20 files: B's stat while A holds them open sees A's buffered attributes (recall)")

# a change B makes while A buffers comes after A's (the recall flushes A before it is
# answered): A's utimes then B's, so B's time must stay after A closes
fd = os.open(A + "/r", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.utime(fd, ns=(T1, T1))
os.fchmod(fd, 0o604)
os.utime(B + "/r", ns=(T2, T2))
os.close(fd)
for p in (A + "/r", B + "/r"):
    st = os.stat(p)
    check(st.st_mtime_ns == T2, "B's utimes after A's buffered one wins (%s: %d)" % (p, st.st_mtime_ns))
    check(st.st_mode & 0o777 == 0o604, "A's buffered chmod is kept (%s: %o)" % (p, st.st_mode))
print("ok: B's setattr while A buffers is ordered after A's")

# a rename, then an unlink, of a file with a buffered chmod, still open
fd = os.open(A + "/m", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, b"hello")
os.fchmod(fd, 0o640)
os.rename(A + "/m", A + "/m2")
check(os.stat(B + "/m2").st_mode & 0o777 == 0o640, "B's stat after the rename: the buffered chmod")
os.fchmod(fd, 0o600)
os.unlink(A + "/m2")
os.fchmod(fd, 0o644)                                     # buffered on an unlinked open file
check(os.fstat(fd).st_mode & 0o777 == 0o644, "fstat of the unlinked file")
os.close(fd)
check(not os.path.exists(B + "/m2") and not os.path.exists(A + "/m2"), "unlinked")
print("ok: rename and unlink after a buffered chmod")

# a utimes between the write and the close, sent to meta ahead of the write's size (a
# link sends every buffered setattr): the size the close sends keeps the time set
fd = os.open(A + "/t", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.write(fd, b"x" * 400)
os.utime(fd, ns=(T2, T2))
os.close(os.open(A + "/lt", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
os.link(A + "/lt", A + "/lt2")
os.close(fd)
st = os.stat(B + "/t")
check((st.st_size, st.st_mtime_ns) == (400, T2),
      "t on B: size %d mtime %d, not 400 and %d" % (st.st_size, st.st_mtime_ns, T2))
print("ok: a utimes sent ahead of the write's size stays")

# fsync sends them: B sees them while A still holds the file open
fd = os.open(A + "/s", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.fchmod(fd, 0o611)
os.fsync(fd)
check(os.stat(B + "/s").st_mode & 0o777 == 0o611, "fsync sent the buffered chmod")
os.close(fd)
print("ok: fsync sends buffered attributes")
PY

# a setattr meta would refuse is not buffered: its caller gets the error (uid 4242 on a
# file it created cannot give it away, nor change the group to one it is not in)
setpriv --reuid 4242 --regid 4242 --clear-groups /usr/bin/python3 - "$MNT/d" <<'PY' || fail "refused setattr"
import errno, os, sys
A = sys.argv[1]
fd = os.open(A + "/u", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.fchmod(fd, 0o640)                                     # allowed: buffered
for args, what in (((1, -1), "chown to another user"), ((-1, 1), "chgrp to a foreign group")):
    try:
        os.fchown(fd, *args)
        print("FAIL:", what, "by a non-root owner succeeded"); sys.exit(1)
    except OSError as e:
        if e.errno != errno.EPERM:
            print("FAIL:", what, e); sys.exit(1)
os.close(fd)
st = os.stat(A + "/u")
if (st.st_mode & 0o777, st.st_uid, st.st_gid) != (0o640, 4242, 4242):
    print("FAIL: after the refusals", oct(st.st_mode), st.st_uid, st.st_gid); sys.exit(1)
print("ok: a non-owner's chown is refused with EPERM, the buffered chmod kept")
PY
[ "$(stat -c '%a %u %g' "$B/d/u")" = "640 4242 4242" ] || fail "B sees u as $(stat -c '%a %u %g' "$B/d/u")"

# tar with --same-owner -p: the extraction equals the source, entry for entry
SRC=$T/src
python3 - "$SRC" <<'PY'
import os, random, sys
random.seed(8)
root = sys.argv[1]
for d in range(12):
    dp = os.path.join(root, "dir%02d" % d, "sub%d" % (d % 3))
    os.makedirs(dp)
    for f in range(25):
        p = os.path.join(dp, "f%03d" % f)
        with open(p, "wb") as fh:
            fh.write(os.urandom(random.randint(0, 8192)))
        os.chown(p, random.randint(0, 3000), random.randint(0, 3000))
        os.chmod(p, random.choice([0o644, 0o600, 0o755, 0o4755, 0o2750, 0o444, 0o1777]))
        t = random.randint(10**9, 1.7 * 10**9)
        os.utime(p, (t, t))
    os.symlink("f000", os.path.join(dp, "link"))
for dirpath, dirs, files in os.walk(root, topdown=False):
    os.chmod(dirpath, 0o750)
    os.utime(dirpath, (1234567890, 1234567890))
PY
tar -C "$SRC" -cf "$T/src.tar" . || fail "tar c"
mkdir "$MNT/x"
tar -C "$MNT/x" --same-owner -p -xf "$T/src.tar" || fail "tar x on the write-back mount"
diff -r "$SRC" "$MNT/x" >/dev/null || fail "diff -r after tar x"
cmp_tree() { # cmp_tree DIR: mode, owner, mtime and size of every entry equal $SRC's
	python3 - "$SRC" "$1" <<'PY'
import os, sys
a, b = sys.argv[1], sys.argv[2]
bad = 0
for dirpath, dirs, files in os.walk(a):
    for n in dirs + files:
        pa = os.path.join(dirpath, n)
        pb = os.path.join(b, os.path.relpath(pa, a))
        sa, sb = os.lstat(pa), os.lstat(pb)
        ka = (sa.st_mode, sa.st_uid, sa.st_gid, int(sa.st_mtime), sa.st_size if not os.path.isdir(pa) else 0)
        kb = (sb.st_mode, sb.st_uid, sb.st_gid, int(sb.st_mtime), sb.st_size if not os.path.isdir(pb) else 0)
        if ka != kb:
            print("differs:", pb, ka, kb); bad += 1
sys.exit(1 if bad else 0)
PY
}
cmp_tree "$MNT/x" || fail "tar x: modes, owners or times differ on A"
cmp_tree "$B/x" || fail "tar x: modes, owners or times differ on B"
ok "tar --same-owner -p on the write-back mount equals the source (diff -r, stat)"

# everything is at meta: unmount, weft down, weft up
stat -c '%n %a %u %g %Y %s' "$MNT"/d/* | sort >"$T/before"
umount "$B"
cluster_down
cluster_up --stores 1 --replicas 1
stat -c '%n %a %u %g %Y %s' "$MNT"/d/* | sort >"$T/after"
diff "$T/before" "$T/after" || fail "attributes changed across weft down / weft up"
cmp_tree "$MNT/x" || fail "tar x: modes, owners or times differ after weft down / weft up"
ok "after weft down / weft up every mode, owner, time and size is as set"
check_logs
