#!/usr/bin/env bash
# A full disk through the whole stack: the stores' target directories are small tmpfs
# mounts; a write that does not fit fails with ENOSPC at the writer (fsync and close
# report it), what was written and closed before stays intact, and once the big file
# is removed the space comes back and the file system serves writes again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
# a store out of space logs the failed write; the client logs the error it returns
ALLOWED_ERRORS='No space left|ENOSPC|space'

eval "$(declare -f pre_cleanup | sed '1s/pre_cleanup/cluster_pre_cleanup/')"
pre_cleanup() {
	cluster_pre_cleanup
	for d in "$STATE"/store0 "$STATE"/store1; do
		mountpoint -q "$d" 2>/dev/null && umount "$d"
	done
	return 0
}

mkdir -p "$STATE/store0" "$STATE/store1"
for d in "$STATE/store0" "$STATE/store1"; do
	mount -t tmpfs -o size=48m tmpfs "$d" || fail "cannot mount a tmpfs on $d (needs root)"
done
cluster_up --stores 2 --replicas 1
ok "weft up with two stores on 48 MiB file systems"

head -c $((8 << 20)) /dev/urandom >"$T/keep"
cp "$T/keep" "$MNT/keep"
want=$(sha "$T/keep")

# 200 MiB cannot fit in 2 x 48 MiB
if dd if=/dev/zero of="$MNT/big" bs=1M count=200 conv=fsync 2>"$T/dd.err"; then
	fail "a 200 MiB write on 96 MiB of stores succeeded"
fi
grep -q 'No space left on device' "$T/dd.err" || fail "expected ENOSPC, got: $(cat "$T/dd.err")"
ok "a write larger than the stores fails with ENOSPC: $(tail -1 "$T/dd.err")"

echo 3 >/proc/sys/vm/drop_caches
[ "$(sha "$MNT/keep")" = "$want" ] || fail "a file written before the disks filled changed"
ok "the file written before is intact"

rm -f "$MNT/big"
# the deleter frees the objects asynchronously: wait until a 16 MiB file fits again
head -c $((16 << 20)) /dev/urandom >"$T/after"
for i in $(seq 50); do
	cp "$T/after" "$MNT/after" 2>/dev/null && break
	rm -f "$MNT/after"; sleep 0.2
done
echo 3 >/proc/sys/vm/drop_caches
[ "$(sha "$MNT/after")" = "$(sha "$T/after")" ] || fail "writing after the space came back failed"
"$WEFT" status --dir "$STATE" >"$T/status.out" || fail "weft status failed"
grep -c ' up ' "$T/status.out" | grep -qx 2 || fail "expected two stores up: $(cat "$T/status.out")"
ok "after rm the space came back: new writes succeed, both stores up"

cluster_down
check_logs
