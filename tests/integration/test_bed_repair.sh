# Repair on read and by weft scrub (on the multi-host bed): a replica whose object has a flipped byte
# fails its checksum when read; the client gets the bytes from the other replica, and
# the damaged store copies the object again from it: afterwards its object file holds
# the right bytes (equal to the good replica's).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../bed/bed.sh"
trap 'exit 143' TERM INT HUP # so that cleanup (EXIT) takes the bed down
BED=${BED:-wq$$-}
bed_available || { echo "SKIP: network namespaces unavailable here"; exit 77; }
source "$(dirname "$0")/../bed/cluster.sh"
pre_cleanup() { bedc_down; }

bedc_up 4 --replicas 2 --stripe-count 1 --stripe-unit 256K
head -c $((512 * 1024 + 1000)) /dev/urandom >"$T/src"
cp "$T/src" "$MNT/f"
sync
ino=$(stat -c %i "$MNT/f")
name=$(printf '%016x.0' "$ino")
mapfile -t copies < <(find "$T"/store*/objects -name "$name")
[ ${#copies[@]} = 2 ] || fail "expected 2 copies of $name, found ${#copies[@]}"
A=${copies[0]} B=${copies[1]}
cmp -s "$A" "$B" || fail "replicas differ before the test"
# flip a byte in each row of replica A (reads alternate members by row: one row of
# the file is read from A whichever member a row starts on)
python3 - "$A" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    for off in (1000, 300 * 1024, 512 * 1024 + 10):
        f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x5a]))
PY
cmp -s "$A" "$B" && fail "flip did not change replica A"
ok "flipped 3 bytes in $(basename "$(dirname "$(dirname "$(dirname "$(dirname "$A")")")")")'s copy"
echo 3 >/proc/sys/vm/drop_caches
for i in 1 2 3; do
	cmp -s "$MNT/f" "$T/src" || fail "read $i of the file returned wrong bytes"
	echo 3 >/proc/sys/vm/drop_caches
done
ok "reads return the right bytes (the damaged copy is skipped)"
n=100; while ! cmp -s "$A" "$B" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
cmp -s "$A" "$B" || fail "replica A was not repaired"
grep -h "repaired from target" "$T"/store*.log | head -2
ok "the damaged replica's object file holds the right bytes again"

# weft scrub: a flipped byte nobody reads is found and repaired in the background
head -c $((300 * 1024)) /dev/urandom >"$T/src2"
cp "$T/src2" "$MNT/g"
sync
name=$(printf '%016x.0' "$(stat -c %i "$MNT/g")")
mapfile -t copies < <(find "$T"/store*/objects -name "$name")
[ ${#copies[@]} = 2 ] || fail "expected 2 copies of $name"
A=${copies[1]} B=${copies[0]}
python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(70000); b = f.read(1); f.seek(70000); f.write(bytes([b[0] ^ 1]))' "$A"
cmp -s "$A" "$B" && fail "flip did not change the copy"
out=$(bedc_weft scrub --rate 50) || fail "weft scrub: $out"
echo "$out"
n=150; while ! cmp -s "$A" "$B" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
cmp -s "$A" "$B" || { grep -h scrub "$T"/store*.log; fail "scrub did not repair the copy"; }
grep -h "scrub: .*bad chunks" "$T"/store*.log | head -2
ok "weft scrub found and repaired the damaged copy"
cmp -s "$MNT/g" "$T/src2" || fail "g reads wrong"

# weft scrub: an object lost from one replica (removed from objects/) is copied back from
# the other, found through meta's layouts, with no read
head -c $((200 * 1024)) /dev/urandom >"$T/src3"
cp "$T/src3" "$MNT/h"
sync
name=$(printf '%016x.0' "$(stat -c %i "$MNT/h")")
mapfile -t copies < <(find "$T"/store*/objects -name "$name")
[ ${#copies[@]} = 2 ] || fail "expected 2 copies of $name"
A=${copies[0]} B=${copies[1]}
rm -f "$A" "$A".*
[ -e "$A" ] && fail "could not remove $A"
out=$(bedc_weft scrub --rate 50) || fail "weft scrub: $out"
n=150; while ! cmp -s "$A" "$B" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
cmp -s "$A" "$B" || { grep -h scrub "$T"/store*.log; fail "scrub did not copy the lost object back"; }
grep -h "scrub: .*was missing here" "$T"/store*.log | head -2
ok "weft scrub copied a lost object back from the other replica"
cmp -s "$MNT/h" "$T/src3" || fail "h reads wrong"
