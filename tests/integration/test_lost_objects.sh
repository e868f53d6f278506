#!/usr/bin/env bash
# Data that was written is never read back as zeros or as old bytes (issue 15). On a
# `weft up` cluster of 4 stores, one store (the victim) loses data in three ways:
#   empty    SIGKILL, its objects/ emptied, started again at once
#   restore  SIGKILL, its directory replaced by a copy taken before the last writes
#   delete   OBJ_DELETE of the file's objects sent to it
#   stale    one object's data file and sidecar copied back from a copy taken before the
#            last writes, the store running and trusted: weft scrub reports it stale and
#            repairs it (replicas >= 2), then the same restore is found by a read
# Files of 1, 2 and 3 replicas are placed so that the victim is, in turn, every member
# of their chain (first; first and last; first, middle and last). Then:
#   replicas 1: the read fails with EIO (never zeros, never old bytes);
#   replicas 2, 3: the read returns the right bytes (sha256) without an error;
#   delete: afterwards every replica holds the right bytes again (object files compared);
#   empty, restore: the victim sets its old contents aside and rejoins empty, as
#   syncing (serves no reads until resynced).
# And real holes still read as zeros: a sparse file and a file truncated down and then
# extended are compared byte for byte with the same operations on a local file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
STORE_CLIENT=${STORE_CLIENT:-$BUILD/tests/integration/store_client}
SIZE=300000

# target id -> its store directory name (weft up: node K runs storeK)
store_of() {
	"$WEFT" status --dir "$STATE" | awk -v t="$1" '$1 == t && $2 ~ /^node/ { sub("node", "store", $2); print $2 }'
}
# members R CHAIN: the chain's target ids in order; states CHAIN likewise with states
members() {
	"$WEFT" status --dir "$STATE" | awk -v r="$1" -v c="$2" '
		/replicas?: [0-9]+ chains/ { cur = $1 }
		cur == r && $1 == "chain" && $2 == c {
			for (i = 4; i <= NF; i++) if ($i != "->") { split($i, a, "("); printf "%s ", a[1] }
			print "" }'
}
member_state() { # member_state R CHAIN TARGET
	"$WEFT" status --dir "$STATE" | awk -v r="$1" -v c="$2" -v t="$3" '
		/replicas?: [0-9]+ chains/ { cur = $1 }
		cur == r && $1 == "chain" && $2 == c {
			for (i = 4; i <= NF; i++) { split($i, a, "[()]"); if (a[1] == t) print a[2] } }'
}
chain_of() { "$WEFT" getstripe "$1" --dir "$STATE" | awk '/first_chain/ { print $2 }'; }
obj_file() { # obj_file STORE INO: stripe 0 of INO on STORE
	printf '%s/%s/objects/%02x/%02x/%016x.0' "$STATE" "$1" $(( ($2 >> 16) & 255 )) $(( ($2 >> 8) & 255 )) "$2"
}
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
kill_store() { # kill_store STORE: SIGKILL, wait until gone
	local pid; pid=$(cat "$STATE/$1.pid")
	kill -9 "$pid"
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.05; done
	fail "$1 (pid $pid) did not die"
}
restart() { "$WEFT" up --dir "$STATE" --mount "$MNT" >>"$T/up.out" 2>&1 || fail "weft up again failed"; }

# place R POS...: files in $MNT/rR (one stripe, R replicas) until VICTIM has been member
# POS (0 = first) of some file's chain for each POS; FILES gets "path:position:victim"
place() {
	local r=$1 d="$MNT/r$1" i pos t have=" "; shift
	local want=" $* "
	mkdir -p "$d"
	# 64K units: a file is 5 rows, which alternate between the members when read, so
	# every replica, the victim too, serves part of each read
	"$WEFT" setstripe "$d" --dir "$STATE" --stripe-count 1 --stripe-unit 64K \
		--replicas "$r" >/dev/null
	for i in $(seq 40); do
		[ -e "$d/f$i" ] && continue
		head -c $SIZE /dev/urandom >"$d/f$i"
		pos=0
		for t in $(members "$r" "$(chain_of "$d/f$i")"); do
			if [ "$t" = "$VICTIM" ] && [[ "$want" == *" $pos "* ]] && [[ "$have" != *" $pos "* ]]; then
				have="$have$pos "; FILES+=("$d/f$i:$pos:$VICTIM")
			fi
			pos=$((pos + 1))
		done
		[ "$(echo $have | wc -w)" = "$#" ] && return 0
	done
	fail "no placement of target $VICTIM at positions $* of a $r-replica chain"
}

# Writes every file's expected content (fresh random bytes) through the mount.
write_all() {
	local e f
	for e in "${FILES[@]}"; do
		f=${e%%:*}
		head -c $SIZE /dev/urandom >"$T/want.$(basename "$(dirname "$f")").$(basename "$f")"
		cp "$T/want.$(basename "$(dirname "$f")").$(basename "$f")" "$f"
		sync "$f" # fsync
	done
}
want_of() { echo "$T/want.$(basename "$(dirname "$1")").$(basename "$1")"; }

# Reads every file back and checks: replicas 1 fails with EIO, others the right bytes.
check_reads() {
	local kind=$1 e f pos r
	drop
	for e in "${FILES[@]}"; do
		f=${e%%:*}; pos=${e#*:}; pos=${pos%%:*}; r=$(basename "$(dirname "$f")"); r=${r#r}
		if [ "$r" = 1 ]; then
			if cat "$f" >"$T/got" 2>"$T/cat.err"; then
				cmp -s "$T/got" "$(want_of "$f")" && what="the right bytes (?)" || what="wrong bytes"
				fail "$kind, replicas 1: the read succeeded with $what"
			fi
			grep -q 'Input/output error' "$T/cat.err" || fail "$kind, replicas 1: $(cat "$T/cat.err")"
			ok "$kind, replicas 1: read fails with EIO"
		else
			cat "$f" >"$T/got" 2>"$T/cat.err" || fail "$kind, replicas $r, victim at $pos: $(cat "$T/cat.err")"
			[ "$(sha "$T/got")" = "$(sha "$(want_of "$f")")" ] ||
				fail "$kind, replicas $r, victim at position $pos: wrong bytes"
			ok "$kind, replicas $r, victim at chain position $pos: right bytes, no error"
		fi
	done
}

# Every member of every replicated file's chain holds the right bytes (object files).
check_replicas() {
	local kind=$1 e f r ino t obj n
	for e in "${FILES[@]}"; do
		f=${e%%:*}; r=$(basename "$(dirname "$f")"); r=${r#r}
		[ "$r" = 1 ] && continue
		ino=$(stat -c %i "$f")
		for t in $(members "$r" "$(chain_of "$f")"); do
			obj=$(obj_file "$(store_of "$t")" "$ino")
			for n in $(seq 100); do
				[ -f "$obj" ] && cmp -s "$obj" "$(want_of "$f")" && break
				sleep 0.1
			done
			cmp -s "$obj" "$(want_of "$f")" || fail "$kind: target $t does not hold $f again"
		done
	done
	ok "$kind: every replica holds the right bytes again"
}

# A victim that lost its disk rejoins as a new member: its old contents are set aside,
# never served; it is rebuilding in its chains until it has copied every object of the
# chain back from the other members (replicas-1 chains have nobody to copy from and serve
# at once: their lost objects read as EIO, check_reads), then serving.
check_rejoined() {
	local kind=$1 e f r st
	for e in "${FILES[@]}"; do
		f=${e%%:*}; r=$(basename "$(dirname "$f")"); r=${r#r}
		st=$(member_state "$r" "$(chain_of "$f")" "${e##*:}")
		case $st in rebuilding | syncing | serving) ;;
		*) fail "$kind: target ${e##*:} is '$st' in the chain of $f" ;;
		esac
	done
	ls -d "$STATE/$VSTORE"/untrusted-*/objects >/dev/null 2>&1 ||
		fail "$kind: the victim's old objects were not set aside: $(ls "$STATE/$VSTORE")"
	ok "$kind: the victim rejoined as a new member, its old contents set aside"
}

# setup ROUND: a new cluster. No target is every member of a 3-replica chain (each is
# first in one and, in the others, either middle or last), so round 1's victim, target 1,
# is first and last; round 2's, the middle member of a 3-replica chain, is that.
setup() {
	rm -rf "$STATE"
	cluster_up --stores 4 --replicas 2
	FILES=()
	if [ "$1" != 2 ]; then
		VICTIM=1
		place 1 0; place 2 0 1; place 3 0 2
	fi
	if [ "$1" != 1 ]; then
		VICTIM=$(members 3 0 | awk '{ print $2 }')
		place 3 1
	fi
	VSTORE=$(store_of "$VICTIM")
}

# ---- empty: objects/ emptied, restarted at once ----
for round in ${ONLY_DELETE:-1 2}; do
[ "$round" = 0 ] && break
setup $round
write_all
sleep 1.5 # the index is flushed within a second: its records say what objects/ held
kill_store "$VSTORE"
rm -rf "$STATE/$VSTORE/objects"/*
restart
check_rejoined empty
check_reads empty
check_replicas empty
cluster_down
done

# ---- restore: the directory replaced by a copy taken before the last writes ----
for round in ${ONLY_DELETE:-1 2}; do
[ "$round" = 0 ] && break
setup $round
write_all
sleep 1.5
cp -a "$STATE/$VSTORE" "$T/copy"
write_all # same sizes, new bytes: only the write sequence tells the copy is old
sleep 0.3 # after an fsync a store reports its write sequence to meta within ~20 ms
kill_store "$VSTORE"
rm -rf "${STATE:?}/$VSTORE"
cp -a "$T/copy" "$STATE/$VSTORE"
rm -rf "$T/copy"
restart
check_rejoined restore
check_reads restore
check_replicas restore
cluster_down
done

# ---- stale: one object's files replaced by a copy taken before the last writes ----
# The victim's target stays trusted (never restarted): only the object's data file and
# sidecar are copied back over the current ones, as a restore of single files from a
# backup would. Same sizes, new bytes: the CRCs match the old bytes, and only the stamp
# the index recorded at the last write tells the files are old. A small object's entries
# are in its data file's attribute (cp --preserve=xattr), a larger one's in the sidecar.
stale_restore() { # copies each file's victim object back from $T/old.*
	local e f ino obj
	for e in "${FILES[@]}"; do
		f=${e%%:*}; ino=$(stat -c %i "$f"); obj=$(obj_file "$(store_of "${e##*:}")" "$ino")
		cp --preserve=xattr "$T/old.$ino" "$obj"
		if [ -e "$T/old.$ino.crc" ]; then cp "$T/old.$ino.crc" "$obj.crc"; fi
		if cmp -s "$obj" "$(want_of "$f")"; then fail "stale: the restored copy is not old"; fi
	done
}
setup both
write_all
for e in "${FILES[@]}"; do
	f=${e%%:*}; ino=$(stat -c %i "$f"); obj=$(obj_file "$(store_of "${e##*:}")" "$ino")
	cp --preserve=xattr "$obj" "$T/old.$ino"
	if [ -e "$obj.crc" ]; then cp "$obj.crc" "$T/old.$ino.crc"; fi
done
write_all
stale_restore
nscrub() { cat "$STATE"/logs/store*.log | grep -c 'objects verified, .* stale' || true; }
before=$(nscrub)
"$WEFT" scrub --dir "$STATE" >"$T/scrub.out" || fail "weft scrub: $(cat "$T/scrub.out")"
for _ in $(seq 200); do [ "$(nscrub)" -ge $((before + 4)) ] && break; sleep 0.1; done
[ "$(nscrub)" -ge $((before + 4)) ] || fail "stale: scrub did not finish on every store"
nstale=$(cat "$STATE"/logs/store*.log | grep -c 'scrub: ino .*: stale' || true)
[ "$nstale" = "${#FILES[@]}" ] ||
	fail "stale: scrub reported $nstale stale objects, ${#FILES[@]} restored"
ok "stale: weft scrub reports each of the ${#FILES[@]} restored objects stale"
check_replicas "stale, after scrub"
check_reads "stale, after scrub"
# the same restore again, found by the first read this time (no scrub)
stale_restore
check_reads "stale, on read"
check_replicas "stale, on read"
cluster_down

# ---- delete: OBJ_DELETE of each file's objects on its victim (both rounds at once) ----
setup both
write_all
for e in "${FILES[@]}"; do
	f=${e%%:*}; v=${e##*:}
	"$STORE_CLIENT" "$STATE/cluster.key" "$(cat "$STATE/meta.addr")" \
		"$(cat "$STATE/$(store_of "$v").addr")" delete "$(stat -c %i "$f")" >"$T/del.out" ||
		fail "OBJ_DELETE: $(cat "$T/del.out")"
done
check_reads delete
check_replicas delete
# and read with the other replicas' stores stopped: the victim alone serves it right
for e in "${FILES[@]}"; do
	f=${e%%:*}; v=${e##*:}; r=$(basename "$(dirname "$f")"); r=${r#r}
	[ "$r" = 2 ] || continue
	others=$(members 2 "$(chain_of "$f")" | tr ' ' '\n' | grep -vx "$v" | grep .)
	for t in $others; do kill_store "$(store_of "$t")"; done
	drop
	got=$(sha "$f" 2>"$T/cat.err") || fail "delete: read from the repaired victim alone: $(cat "$T/cat.err")"
	[ "$got" = "$(sha "$(want_of "$f")")" ] || fail "delete: the repaired victim alone serves wrong bytes"
	restart
	break
done
ok "delete: the repaired replica alone serves the right bytes"

# ---- real holes still read as zeros (differential against a local file) ----
H="$MNT/holes"; mkdir -p "$H"
"$WEFT" setstripe "$H" --dir "$STATE" --stripe-count 4 --stripe-unit 64K --replicas 2 >/dev/null
L="$T/local"; mkdir -p "$L"
dd if=/dev/urandom of="$T/rnd" bs=64K count=1 2>/dev/null
dd if=/dev/urandom of="$T/rnd3" bs=1M count=3 2>/dev/null
for d in "$H" "$L"; do
	# sparse: stripes 1 and 3 of the first row and most of the file never written
	dd if="$T/rnd" of="$d/sparse" bs=64K seek=0 conv=notrunc 2>/dev/null
	dd if="$T/rnd" of="$d/sparse" bs=64K seek=2 conv=notrunc 2>/dev/null
	dd if="$T/rnd" of="$d/sparse" bs=64K seek=41 conv=notrunc 2>/dev/null
	truncate -s 5M "$d/sparse"
	# truncated down, then extended by a truncate and a write past the end
	cp "$T/rnd3" "$d/trunc"
	truncate -s 100000 "$d/trunc"
	truncate -s 4M "$d/trunc"
	printf 'end' | dd of="$d/trunc" bs=1 seek=$((5 << 20)) conv=notrunc 2>/dev/null
	# truncated to zero and written again at an offset: the stripes before are holes
	cp "$T/rnd3" "$d/again"
	truncate -s 0 "$d/again"
	dd if="$T/rnd" of="$d/again" bs=64K seek=7 conv=notrunc 2>/dev/null
done
drop
for f in sparse trunc again; do
	cmp "$H/$f" "$L/$f" >"$T/cmp.out" 2>&1 || fail "$f differs from a local file: $(cat "$T/cmp.out")"
	[ "$(stat -c %s "$H/$f")" = "$(stat -c %s "$L/$f")" ] || fail "$f: size differs"
done
ok "a sparse file, a file truncated down and extended, and one truncated to 0 and rewritten read zeros exactly where a local file does"

cluster_down
check_logs
