#!/usr/bin/env bash
# What makes metadata durable (docs/ARCHITECTURE.md, "Metadata durability"): meta answers
# EXTEND (the size at close) and buffered attributes (wb_attrs) once committed, before a
# sync; `weft sync MOUNTPOINT`, `weft sync --dir`, a directory's fsync, the end of a
# mount and `weft down` must each make them durable. Each case takes a simulated power
# cut (powercut.sh: a copy of meta's database rolled back to its last synced commit),
# restarts the cluster on it and checks what survived. The first case, with no sync,
# must lose the size: it shows the simulation bites (meta's syncs are held off 10 min).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/powercut.sh"

export WEFT_META_TEST_SYNCLOG=$T/synced.log WEFT_META_IDLE_SYNC_MS=600000
export WEFT_META_TEST_COMMITLOG=$T/commits.log
export WEFT_META_SYNC_DELAY_MS=600000
export WEFT_UP_MOUNT_OPTS=wb_attrs
cluster_up --stores 1 --replicas 1

# NAME: a file created (durable), written (size at close: lazy) and chmod'ed through its
# descriptor (buffered with wb_attrs, sent at close: lazy)
put() {
	python3 - "$MNT/$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, b"x" * 12345)
os.fchmod(fd, 0o640)
os.close(fd)
PY
}
cut() { # cut NAME: a power cut now, into $T/cut.NAME
	sleep 0.3
	powercut_copy "$STATE/meta" "$T/cut.$1" "$WEFT_META_TEST_SYNCLOG" | tee "$T/cut.$1.out"
}

# the first case needs the chmod to be the last commit: it starts right after a store's
# heartbeat, and starts again (another name) if the next heartbeat still came first
nosync=
for try in 1 2 3 4; do
	powercut_after_heartbeat "$WEFT_META_TEST_COMMITLOG"
	put nosync$try; cut nosync
	taken=$(powercut_taken "$T/cut.nosync.out" "$WEFT_META_TEST_COMMITLOG")
	case " $taken " in
	*" TARGET_HEARTBEAT "*) echo "a heartbeat came last ($taken): again" ;;
	*) echo "the cut took back: $taken"; nosync=nosync$try; break ;;
	esac
done
[ -n "$nosync" ] || fail "no sync: a store's heartbeat came last in 4 tries"
case " $taken " in *" SETATTR "*) ;; *) fail "no sync: the cut took back '$taken', not the chmod" ;; esac
put sync;    "$WEFT" sync "$MNT" || fail "weft sync $MNT";             cut sync
# weft sync --dir reaches meta only, not what a mount still holds: the close of a file
# the mount created returns before its size and mode reach meta (close-behind). Another
# mount's stat makes meta recall them first; then meta has them, committed, not synced.
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" -o no_root_squash --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"
put syncdir
[ "$(stat -c '%s %a' "$B/syncdir")" = "12345 640" ] || fail "syncdir: the other mount's stat"
"$WEFT" sync --dir "$STATE" || fail "weft sync --dir";   cut syncdir
umount "$B"
mkdir "$MNT/d"; sleep 0.3
put d/fsyncdir
python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/d" ||
	fail "fsync of a directory"
cut fsyncdir
put umount
mpid=$(cat "$STATE/mount.pid")
umount "$MNT" || fail "umount"
# umount(2) returns before the mount process ends; the process syncs as it ends
for i in $(seq 100); do kill -0 "$mpid" 2>/dev/null || break; sleep 0.1; done
cut umount
cluster_up --stores 1 --replicas 1
put down
cluster_down
cut down
grep -q "rolled back" "$T/cut.nosync.out" || fail "no sync: the last commit was synced (the size at close should not be)"

# restart on each cut; stat NAME there: "size mode"
check_got() { # check_got CUT NAME: prints "size mode"
	rm -rf "$STATE/meta.live"
	mv "$STATE/meta" "$STATE/meta.live"
	cp -a "$T/cut.$1" "$STATE/meta"
	cluster_up --stores 1 --replicas 1
	local got
	got=$(stat -c '%s %a' "$MNT/$2")
	cluster_down
	rm -rf "$STATE/meta"
	mv "$STATE/meta.live" "$STATE/meta"
	echo "$got"
}
check() { # check CUT NAME EXPECTED
	local got
	got=$(check_got "$1" "$2")
	[ "$got" = "$3" ] || fail "power cut after $1: $2 is '$got', expected '$3'"
	ok "power cut after $1: $2 is $got"
}
# the size (EXTEND) and the mode (SETATTR) go in that order, lazily: the last commit is
# lost, the one before it may be kept (its meta page is synced by the next commit's sync)
got=$(check_got nosync $nosync)
[ "$got" = "0 600" ] || [ "$got" = "12345 600" ] ||
	fail "power cut with no sync: $nosync is '$got', expected its chmod lost"
ok "power cut with no sync: $nosync is $got (the last commit lost)"
for c in sync syncdir umount down; do check $c $c "12345 640"; done
check fsyncdir d/fsyncdir "12345 640"
check_logs
