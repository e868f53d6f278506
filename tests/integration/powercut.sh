# A simulated power cut at meta, on a copy of its database (sourced by tests).
#
# meta's LMDB is opened MDB_NOMETASYNC: a commit syncs its data pages and then writes its
# meta page without syncing it; that meta page becomes durable at the next sync (the
# syncer's mdb_env_sync, or the next commit's data sync). So after a power cut the
# database is the one of the last commit, or of the one before it if that commit's meta
# page was not synced yet. A copy of data.mdb (read from the page cache) has the last
# commit's meta page; powercut_copy takes the copy and, when that commit is newer than
# the last txn id meta logged as synced (WEFT_META_TEST_SYNCLOG, src/meta/commit.h),
# invalidates its meta page (txn id 0), so LMDB opens the copy at the commit before: the
# worst case of a power cut at that moment.
#
# powercut_copy SRC DST SYNCLOG: copies meta directory SRC (not its lock file nor its
# space reserve) to DST and rolls DST back as a power cut would. Prints what it did.
powercut_copy() {
	local src=$1 dst=$2 synclog=$3 synced=0 f
	# read the log first: a sync logged after the copy would not have covered it
	[ -s "$synclog" ] && synced=$(sort -n "$synclog" | tail -1)
	mkdir -p "$dst"
	for f in "$src"/*; do
		case $(basename "$f") in lock.mdb|space.reserve) ;; *) cp -a "$f" "$dst/" ;; esac
	done
	local db=$dst/data.mdb psize magic0 magic1 t0 t1 newest slot
	psize=$(od -An -t u4 -j 40 -N 4 "$db" | tr -d ' ')
	magic0=$(od -An -t x4 -j 16 -N 4 "$db" | tr -d ' ')
	magic1=$(od -An -t x4 -j $((psize + 16)) -N 4 "$db" | tr -d ' ')
	[ "$magic0" = beefc0de ] && [ "$magic1" = beefc0de ] ||
		fail "powercut_copy: $db: not an LMDB file I know (magic $magic0 $magic1, page $psize)"
	t0=$(od -An -t u8 -j 144 -N 8 "$db" | tr -d ' ')
	t1=$(od -An -t u8 -j $((psize + 144)) -N 8 "$db" | tr -d ' ')
	if [ "$t0" -gt "$t1" ]; then newest=$t0; slot=0; else newest=$t1; slot=1; fi
	if [ "$newest" -gt "$synced" ]; then
		dd if=/dev/zero of="$db" bs=1 seek=$((slot * psize + 144)) count=8 conv=notrunc \
			status=none
		echo "powercut: txn $newest not synced (last synced $synced): rolled back to $((t0 + t1 - newest))"
	else
		echo "powercut: txn $newest synced: nothing lost"
	fi
}

# A store's heartbeat commits at meta once a second: one that lands between a test's last
# change and its cut is the commit the cut takes back. With WEFT_META_TEST_COMMITLOG
# (commit.h: "TXNID OP..." per commit) a test starts its last changes right after a
# heartbeat and checks which commit the cut took back.
#
# powercut_after_heartbeat COMMITLOG: returns just after the next heartbeat's commit
powercut_after_heartbeat() {
	local n i
	n=$(wc -l < "$1" 2>/dev/null || echo 0)
	for i in $(seq 500); do
		tail -n +$((n + 1)) "$1" 2>/dev/null | grep -q " TARGET_HEARTBEAT" && return 0
		sleep 0.01
	done
	fail "powercut_after_heartbeat: no heartbeat committed in 5 s ($1)"
}
# powercut_taken CUTOUT COMMITLOG: prints the ops of the commit the cut took back
# (powercut_copy's output in CUTOUT); nothing if it took none back
powercut_taken() {
	local txn
	txn=$(sed -n 's/^powercut: txn \([0-9]*\) not synced.*/\1/p' "$1")
	[ -n "$txn" ] && awk -v t="$txn" '$1 == t { $1 = ""; print substr($0, 2) }' "$2" | tail -1
	return 0
}
