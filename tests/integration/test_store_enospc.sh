#!/usr/bin/env bash
# A store whose disk fills up (a 12 MiB tmpfs): the write that does not fit gets a clean
# ENOSPC, nothing of it is acknowledged, reads and other requests keep working, and
# writes succeed again once space is freed. Needs root for the mount (exit 77 = skip).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store_lib.sh"
ALLOWED_ERRORS='No space left on device'
mkdir -p "$T/small"
if ! mount -t tmpfs -o size=12m tmpfs "$T/small" 2>/dev/null; then
	echo "skip: cannot mount a tmpfs (not root?)"
	exit 77
fi
umount_small() { umount "$T/small" 2>/dev/null || umount -l "$T/small" 2>/dev/null || true; }
on_exit() {
	local rc=$?
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; }; done
	PIDS=()
	umount_small
	(exit $rc) || cleanup
	cleanup
}
trap on_exit EXIT
start_meta
SDIR="$T/small/s1" start_store s1
S=$ADDR_s1
[ -n "$S" ] || fail "no store address"
i=0; last=""
while [ $i -lt 40 ]; do
	out=$(sc "$S" write 50 0 $((i * 1048576)) 1048576 50 2>&1) || true
	echo "$out" | grep -q '^ok' || { last=$out; break; }
	i=$((i + 1))
done
echo "filled $i MiB, then: $last"
[ $i -ge 2 ] && [ $i -lt 40 ] || fail "expected the disk to fill after a few MiB (wrote $i)"
echo "$last" | grep -q 'No space left on device' || fail "not ENOSPC: $last"
# nothing of the failed write is acknowledged or visible: the object ends where it did
expect "^ok size=$((i * 1048576))\$" sc "$S" stat 50 0
"$SC" pattern 50 0 $((i * 1048576)) "$T/ref"
expect "^ok n=$((i * 1048576))\$" sc "$S" read 50 0 0 $(( (i + 1) * 1048576 )) "$T/got"
cmp "$T/got" "$T/ref" || fail "data before the full disk changed"
expect 'target=' sc "$S" stats
expect '^ok synced$' sc "$S" fsync 50 0
ok "ENOSPC on a full disk: clean error, nothing acknowledged, reads and others still served"
# freeing space lets writes through again
expect '^ok size=1048576$' sc "$S" truncate 50 0 1048576
expect '^ok size=2097152$' sc "$S" write 50 0 1048576 1048576 50
ok "writes succeed again once space is freed"
store_check_logs
ok "store enospc"
