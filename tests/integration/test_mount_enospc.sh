#!/usr/bin/env bash
# A full store disk through the whole stack, with replicas 1 and replicas 2: the stores'
# target directories are small tmpfs mounts (with replicas 2 of different sizes, so one
# member fills while the other still has room). A write that does not fit fails with
# ENOSPC at the writer (write, fsync or close report it, never EIO), what was written
# and closed before stays intact (sha256), reads keep working, and once the big file is
# removed the space comes back and the file system serves writes again, with no restart.
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

run() { # run REPLICAS SIZE0 SIZE1
	local r=$1
	mkdir -p "$STATE/store0" "$STATE/store1"
	mount -t tmpfs -o size=$2 tmpfs "$STATE/store0" || fail "cannot mount a tmpfs (needs root)"
	mount -t tmpfs -o size=$3 tmpfs "$STATE/store1" || fail "cannot mount a tmpfs (needs root)"
	cluster_up --stores 2 --replicas "$r"
	local pids="$(cat "$STATE"/store*.pid "$STATE/meta.pid")"
	ok "replicas $r: weft up with two stores on $2 and $3 file systems"

	head -c $((8 << 20)) /dev/urandom >"$T/keep"
	cp "$T/keep" "$MNT/keep"
	local want=$(sha "$T/keep")

	# 200 MiB cannot fit
	if dd if=/dev/zero of="$MNT/big" bs=1M count=200 conv=fsync 2>"$T/dd.err"; then
		fail "a 200 MiB write on stores of $2 and $3 succeeded"
	fi
	grep -q 'No space left on device' "$T/dd.err" || fail "expected ENOSPC, got: $(cat "$T/dd.err")"
	ok "a write larger than the stores fails with ENOSPC: $(tail -1 "$T/dd.err")"
	# the same through close alone (write-behind: the error comes at close)
	if python3 -c 'import os,sys
f=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT,0o644)
b=b"x"*(1<<20)
try:
    for i in range(200): os.write(f,b)
except OSError as e:
    print("write",e.errno); sys.exit(e.errno)
try: os.close(f)
except OSError as e: print("close",e.errno); sys.exit(e.errno)' "$MNT/big2" >"$T/py.out" 2>&1; then
		fail "200 MiB of writes and a close succeeded"
	fi
	grep -Eq '^(write|close) 28$' "$T/py.out" || fail "write/close: $(cat "$T/py.out") (want errno 28)"
	ok "writes then close without fsync: ENOSPC at $(cut -d' ' -f1 "$T/py.out")"
	# a new file small enough to be buffered whole: its close must not go behind
	# (closebehind.c) while the stores are this full, so the close reports it
	if python3 -c 'import os,sys
f=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT|os.O_EXCL,0o644)
os.write(f,b"y"*(4<<20))
try: os.close(f)
except OSError as e: print("close",e.errno); sys.exit(e.errno)' "$MNT/small" >"$T/py2.out" 2>&1; then
		fail "a 4 MiB file closed without error on full stores"
	fi
	grep -q '^close 28$' "$T/py2.out" || fail "small file: $(cat "$T/py2.out") (want close 28)"
	ok "a new 4 MiB file on full stores: its close reports ENOSPC"

	echo 3 >/proc/sys/vm/drop_caches
	[ "$(sha "$MNT/keep")" = "$want" ] || fail "a file written before the disks filled changed"
	ok "the file written before is intact"

	rm -f "$MNT/big" "$MNT/big2" "$MNT/small"
	# the deleter frees the objects asynchronously: wait until a 16 MiB file fits again
	head -c $((16 << 20)) /dev/urandom >"$T/after"
	for i in $(seq 50); do
		cp "$T/after" "$MNT/after" 2>/dev/null && break
		rm -f "$MNT/after"; sleep 0.2
	done
	echo 3 >/proc/sys/vm/drop_caches
	[ "$(sha "$MNT/after")" = "$(sha "$T/after")" ] || fail "writing after the space came back failed"
	[ "$(sha "$MNT/keep")" = "$want" ] || fail "the earlier file changed after rm"
	"$WEFT" status --dir "$STATE" >"$T/status.out" || fail "weft status failed"
	grep -c ' up ' "$T/status.out" | grep -qx 2 || fail "expected two stores up: $(cat "$T/status.out")"
	[ "$(cat "$STATE"/store*.pid "$STATE/meta.pid")" = "$pids" ] || fail "a daemon restarted"
	ok "replicas $r: after rm the space came back: new writes succeed, both stores up, no restart"

	cluster_down
	umount "$STATE/store0" "$STATE/store1"
	check_logs
	rm -rf "$STATE" "$T"/*.log
}

run 1 48m 48m
run 2 32m 64m
