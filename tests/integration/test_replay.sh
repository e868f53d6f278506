#!/usr/bin/env bash
# Replay after a power cut at meta (docs/ARCHITECTURE.md, "Metadata durability"): meta
# answers a mutation once committed, before the sync of the meta page that makes it
# survive a power cut; the mount keeps each acknowledged mutation until meta reports it
# synced, and replays it after meta restarts. Meta's syncs are held off (sync delay and
# idle sync 10 min), a tree is built, renamed, unlinked and chmod'ed, the last ops in a
# parallel burst; a simulated power cut (powercut.sh) rolls the database back to its
# last synced commit; meta is SIGKILLed and restarted on it. Every change the mount saw
# acknowledged must be there after the replay, none twice: a listing with inode
# numbers, modes, link counts and sizes equals the one before the cut, from a fresh mount.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
. "$(dirname "$0")/powercut.sh"

export WEFT_META_TEST_SYNCLOG=$T/synced.log WEFT_META_TEST_COMMITLOG=$T/commits.log
export WEFT_META_SYNC_DELAY_MS=600000 WEFT_META_IDLE_SYNC_MS=600000
cluster_up --stores 1 --replicas 1

listing() { # listing DIR: one line per entry, sorted
	(cd "$1" && find . -mindepth 1 -printf '%i %m %n %s %y %p %l\n' | sort -k6)
}
build_tree() {
	cd "$MNT"
	mkdir -p t/a/b/c t/d
	for i in $(seq 10); do echo "file $i" > "t/a/f$i"; done
	mv t/a/f1 t/d/g1
	rm t/a/f2
	chmod 600 t/a/f3
	ln -s ../a/f4 t/d/s4
	ln t/a/f5 t/d/h5
	mkdir t/a/b/c/e
	rmdir t/a/b/c/e
	mv t/a/b t/d/b
	for i in $(seq 5); do echo "x $i" > "t/d/b/c/x$i"; done
	chmod 640 t/d/b/c/x3
	mv t/d/b/c/x4 t/y4
	rm t/d/b/c/x5
	cd /
}
# the last: a parallel burst, several mutations in one batch (the one a power cut takes
# back), right after a store's heartbeat (one coming after it would be what the cut took
# back); again, with other names, if one did
burst() { # burst TRY
	cd "$MNT"
	for i in $(seq 6 21); do
		{ mkdir "t/d/b/c/x$1.$i"; chmod 700 "t/d/b/c/x$1.$i"; } &
	done
	wait
	cd /
}
build_tree
for try in 1 2 3 4; do
	powercut_after_heartbeat "$WEFT_META_TEST_COMMITLOG"
	burst $try
	listing "$MNT" > "$T/before"
	sleep 0.3
	rm -rf "$T/cut"
	powercut_copy "$STATE/meta" "$T/cut" "$WEFT_META_TEST_SYNCLOG" | tee "$T/cut.out"
	taken=$(powercut_taken "$T/cut.out" "$WEFT_META_TEST_COMMITLOG")
	case " $taken " in
	*" TARGET_HEARTBEAT "*) echo "a heartbeat came last ($taken): again" ;;
	*) echo "the cut took back: $taken"; break ;;
	esac
done
grep -q "rolled back" "$T/cut.out" || fail "the last commit was synced: nothing to replay"
case " $taken " in
*" MKDIR "*|*" SETATTR "*) ;;
*) fail "the cut took back '$taken', not the burst's mkdir and chmod" ;;
esac

# the power cut: meta dies, comes back on what the disk held
kill -9 "$(cat "$STATE/meta.pid")"
sleep 0.2
mv "$STATE/meta" "$T/meta.dead"
cp -a "$T/cut" "$STATE/meta"
cluster_up --stores 1 --replicas 1
# a mutation at once: meta answers WEFT_ERECOVERING until the mount replayed (it
# replays from this call if its heartbeat has not yet), then applies it
touch "$MNT/t/early" || fail "a create right after the restart"

# the mount renews its session within a beat and replays; a fresh mount must see it all
B=$T/mnt2
mkdir -p "$B"
ok=0
for i in $(seq 60); do
	if grep -q "acknowledged mutation(s) replayed" "$STATE"/logs/mount*.log 2>/dev/null; then
		ok=1; break
	fi
	sleep 0.25
done
[ $ok = 1 ] || fail "the mount did not replay"
grep -h "acknowledged mutation(s) replayed" "$STATE"/logs/mount*.log
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" -o no_root_squash --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"
listing "$B" | grep -v ' ./t/early ' > "$T/after"
umount "$B"
diff "$T/before" "$T/after" || fail "the tree after the replay differs from the one acknowledged"
ok "after a power cut and a replay the tree equals the one acknowledged ($(wc -l < "$T/before") entries)"
grep -q "0 lost" <(grep -h "replayed" "$STATE"/logs/mount*.log) || fail "a replay was refused"
# and it is there for good: new changes work, and survive a clean restart
touch "$MNT/t/after" || fail "create after the replay"
cluster_down
cluster_up --stores 1 --replicas 1
[ -e "$MNT/t/after" ] && [ -e "$MNT/t/y4" ] && [ ! -e "$MNT/t/d/b/c/x5" ] || fail "after a clean restart"
listing "$MNT" | grep -v -e ' ./t/after ' -e ' ./t/early ' > "$T/again"
diff "$T/before" "$T/again" || fail "after a clean restart the tree differs"
ok "a clean restart after the replay keeps it"
check_logs
