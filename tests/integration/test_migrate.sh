#!/usr/bin/env bash
# weft migrate (issue 16): restriping a file that is held open and written, and a
# directory tree, to another stripe count, stripe unit and replica count.
#
#   writer (python, one fd held open on mnt/live, appending and overwriting, keeping a
#   copy of every byte it wrote)          weft migrate (a libweft client of its own)
#        |  mount 1 ($MNT)                      |
#        +--------------- weft meta ------------+---- mount 2 ($T/mnt2: reads back,
#        |                                      |     no page cache of the writer's)
#      store0  store1  store2  store3  (weft up, replicas 2)
#
# Checks: getstripe shows each new layout; the writer saw 0 errors and the file holds
# exactly what it wrote; every other file's sha256 is unchanged (read through the
# second mount); the old generation's objects are gone from every store and the new
# one's are there; bad input gets a one-line error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

eval "$(declare -f pre_cleanup | sed '1s/pre_cleanup/cluster_pre_cleanup/')"
pre_cleanup() {
	touch "$T/writer.stop"
	mountpoint -q "$T/mnt2" 2>/dev/null && { umount "$T/mnt2" || umount -l "$T/mnt2"; }
	cluster_pre_cleanup
}

cluster_up --stores 4 --replicas 2
META=$(cat "$STATE/meta.addr")
KEY=$STATE/cluster.key
mkdir -p "$T/mnt2"
"$WEFT" mount "$META" "$T/mnt2" --key "$KEY" -o no_root_squash --pid-file "$T/mount2.pid" \
	--log "$T/mount2.log" || fail "second mount failed"
ok "weft up: 4 stores, replicas 2, and a second mount"

# a tree of files: empty, tiny, a partial stripe unit, several stripe rows, a hole
declare -A WANT
mkdir -p "$MNT/tree/sub/deeper"
head -c $((9 << 20)) /dev/urandom >"$T/src"
: >"$MNT/tree/empty"
echo hello >"$MNT/tree/tiny"
head -c 300000 "$T/src" >"$MNT/tree/sub/partial"
head -c $((5 << 20)) "$T/src" >"$MNT/tree/sub/rows"
dd if="$T/src" of="$MNT/tree/sub/deeper/holey" bs=64k seek=40 count=3 status=none
ln -s rows "$MNT/tree/sub/link"
for f in empty tiny sub/partial sub/rows sub/deeper/holey; do
	WANT[$f]=$(sha "$MNT/tree/$f")
done

# the writer: holds one descriptor for the whole run
head -c $((6 << 20)) "$T/src" >"$MNT/live"
cat >"$T/writer.py" <<'PY'
import os, random, sys
path, stop, want, report = sys.argv[1:5]
fd = os.open(path, os.O_RDWR)
data = bytearray(os.pread(fd, 64 << 20, 0))
rnd = random.Random(7)
ops = errors = 0
while not os.path.exists(stop) or ops < 200:
    try:
        if rnd.random() < 0.5 and len(data) < (40 << 20):  # append
            chunk = os.urandom(rnd.randint(1, 200000))
            off = len(data)
        else:  # overwrite somewhere
            off = rnd.randrange(0, len(data))
            chunk = os.urandom(rnd.randint(1, 300000))
        n = os.pwrite(fd, chunk, off)
        if n != len(chunk):
            raise OSError("short write %d of %d" % (n, len(chunk)))
        if off + n > len(data):
            data.extend(b"\0" * (off + n - len(data)))
        data[off:off + n] = chunk
        if rnd.random() < 0.2:  # read back what we know is there
            o = rnd.randrange(0, len(data))
            got = os.pread(fd, 100000, o)
            if got != bytes(data[o:o + 100000]):
                raise OSError("read at %d: not what was written" % o)
        if rnd.random() < 0.05:
            os.fsync(fd)
    except OSError as e:
        errors += 1
        print("writer:", e, file=sys.stderr, flush=True)
    ops += 1
try:
    os.fsync(fd)
    os.close(fd)
except OSError as e:
    errors += 1
    print("writer: close:", e, file=sys.stderr, flush=True)
open(want, "wb").write(data)
open(report, "w").write("%d %d\n" % (ops, errors))
PY
python3 "$T/writer.py" "$MNT/live" "$T/writer.stop" "$T/live.want" "$T/writer.out" \
	2>"$T/writer.log" &
WRITER=$!
PIDS+=($WRITER)
sleep 1

# bad input first: one line each, nothing changed
"$WEFT" migrate --stripe-count 2 /tmp >"$T/bad1.out" 2>&1 && fail "migrate of /tmp succeeded"
grep -q "not on a weft mount" "$T/bad1.out" && [ "$(wc -l <"$T/bad1.out")" = 1 ] \
	|| fail "unclear error for a path not on weft: $(cat "$T/bad1.out")"
"$WEFT" migrate --replicas 4 "$MNT/live" >"$T/bad2.out" 2>&1 && fail "--replicas 4 accepted"
grep -q "1, 2 or 3" "$T/bad2.out" && [ "$(wc -l <"$T/bad2.out")" = 1 ] \
	|| fail "unclear error for replicas 4: $(cat "$T/bad2.out")"
"$WEFT" migrate "$MNT/live" >"$T/bad3.out" 2>&1 && fail "migrate without a layout succeeded"
ok "bad input: $(cat "$T/bad1.out"); $(cat "$T/bad2.out")"

ino=$(stat -c %i "$MNT/live")
objects() { # objects INO: the object files of INO on every store, as STORE/NAME
	local hex; hex=$(printf %016x "$1")
	find "$STATE"/store*/objects -name "$hex.*" ! -name '*.crc' 2>/dev/null | sed "s|$STATE/||"
}
objects "$ino" >"$T/live.objects0"
[ -s "$T/live.objects0" ] || fail "no objects of the live file before the migrate"

# the open file, while it is written: 4 chains x 1M x 2 copies -> 2 x 256K x 3
t0=$(date +%s.%N)
"$WEFT" migrate --dir "$STATE" --stripe-count 2 --stripe-unit 256K --replicas 3 "$MNT/live" >"$T/m1.out" 2>&1 \
	|| fail "migrate of the open file: $(cat "$T/m1.out")"
t1=$(date +%s.%N)
"$WEFT" getstripe --dir "$STATE" --json "$MNT/live" >"$T/gs1.json"
python3 - "$T/gs1.json" <<'PY' || fail "getstripe after the migrate: $(cat "$T/gs1.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["stripe_count"], j["stripe_unit"], j["replicas"]) == (2, 262144, 3), j
assert j["generation"] == 1, j
PY
ok "open file migrated while written: $(cat "$T/m1.out")"

# the tree: 1M x all chains x 2 copies -> 128K x 3 chains x 1 copy, directories too
"$WEFT" migrate --dir "$STATE" -r --stripe-count 3 --stripe-unit 128K --replicas 1 "$MNT/tree" >"$T/m2.out" 2>&1 \
	|| fail "migrate of the tree: $(cat "$T/m2.out")"
for f in tiny sub/partial sub/rows sub/deeper/holey; do
	"$WEFT" getstripe --dir "$STATE" --json "$MNT/tree/$f" >"$T/gs.json"
	python3 - "$T/gs.json" <<'PY' || fail "tree/$f: layout after the migrate: $(cat "$T/gs.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["stripe_count"], j["stripe_unit"], j["replicas"]) == (3, 131072, 1), j
PY
done
for d in tree tree/sub tree/sub/deeper; do
	"$WEFT" getstripe --dir "$STATE" --json "$MNT/$d" >"$T/gs.json"
	python3 - "$T/gs.json" <<'PY' || fail "$d: default layout after the migrate: $(cat "$T/gs.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["stripe_count"], j["stripe_unit"], j["replicas"]) == (3, 131072, 1), j
PY
done
echo new >"$MNT/tree/sub/after"
"$WEFT" getstripe --dir "$STATE" "$MNT/tree/sub/after" | grep -q "stripe_unit:  131072" \
	|| fail "a new file in a migrated directory does not get its new default"
ok "tree migrated: $(tail -1 "$T/m2.out")"

# a second migrate of the same file, still written: generation 2
"$WEFT" migrate --dir "$STATE" --stripe-count 0 --stripe-unit 1M --replicas 2 "$MNT/live" >"$T/m3.out" 2>&1 \
	|| fail "second migrate of the open file: $(cat "$T/m3.out")"
"$WEFT" getstripe --dir "$STATE" --json "$MNT/live" >"$T/gs3.json"
python3 - "$T/gs3.json" <<'PY' || fail "getstripe after the second migrate: $(cat "$T/gs3.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j["stripe_count"], j["stripe_unit"], j["replicas"], j["generation"]) == (4, 1 << 20, 2, 2), j
PY

touch "$T/writer.stop"
wait "$WRITER" || fail "the writer failed: $(cat "$T/writer.log")"
read -r ops errors <"$T/writer.out"
[ "$errors" = 0 ] || fail "the writer saw $errors errors in $ops writes: $(head -5 "$T/writer.log")"
[ "$(sha "$T/mnt2/live")" = "$(sha "$T/live.want")" ] \
	|| fail "the live file does not hold what the writer wrote (read through mount 2)"
[ "$(sha "$MNT/live")" = "$(sha "$T/live.want")" ] || fail "the live file differs on mount 1"
for f in "${!WANT[@]}"; do
	[ "$(sha "$T/mnt2/tree/$f")" = "${WANT[$f]}" ] || fail "tree/$f: sha256 changed"
done
[ "$(readlink "$T/mnt2/tree/sub/link")" = rows ] || fail "the symlink changed"
ok "writer: $ops writes, 0 errors, content exact; ${#WANT[@]} tree files unchanged"

# the old generations' objects go (meta's deleter); the last one's are there
for _ in $(seq 100); do
	objects "$ino" >"$T/live.objects"
	awk -F. '$NF < 131072' "$T/live.objects" | grep -q . || break
	sleep 0.1
done
old=$(awk -F. '$NF < 131072' "$T/live.objects")
[ -z "$old" ] || fail "objects of replaced layouts still on the stores: $old"
grep -q . "$T/live.objects" || fail "no objects of the new layout"
for f in sub/rows sub/partial; do
	fi=$(stat -c %i "$MNT/tree/$f")
	objects "$fi" | awk -F. '$NF < 65536' | grep -q . && fail "tree/$f: old objects left"
done
ok "old objects gone: $(wc -l <"$T/live.objects0") before, $(wc -l <"$T/live.objects") of generation 2 now"

umount "$T/mnt2"
cluster_down
check_logs
