#!/usr/bin/env bash
# tar xf over an existing tree (issue 8): GNU tar unlinks each file it finds and creates
# it again, the way a release is unpacked over the last one or a job's inputs are
# refreshed. For each build, alternately, on a fresh `weft up --stores 4 --replicas 2`:
# extract SUBSET, `weft sync`, then extract it again over itself and `weft sync` (timed),
# and check the tree against a local extraction (diff -r). Local ext4 (/var/tmp) does the
# same in each run, for the ratio.
#
#   bash bench/tar_over_ab.sh WEFT_A [WEFT_B] [RUNS] [SUBSET]
#
# SUBSET defaults to linux-source-6.1/drivers/net (6,069 entries). Prints seconds for
# the first extraction and the one over it, with the mount's counters of creates and
# unlinks answered by the mount and directories made complete from a listing. Needs
# root; run it in a network namespace of its own (ip netns exec), one benchmark at a time.
set -euo pipefail
A=$1 B=${2:-} RUNS=${3:-2} SUBSET=${4:-linux-source-6.1/drivers/net}
D=${WEFT_BENCH_DIR:-/var/tmp/weft-bench-tarover}
TARBALL=/usr/src/linux-source-6.1.tar.xz
mkdir -p "$D"
[ -f "$D/linux.tar" ] || xz -dc "$TARBALL" >"$D/linux.tar"
export WEFT_RUN_DIR=$D/run
W=
cleanup() {
	[ -z "$W" ] || "$W" down --dir "$D/state" >/dev/null 2>&1 || true
	rm -rf "$D/state" "$D/mnt" "$D/local"
}
trap cleanup EXIT
secs() { local t0; t0=$(date +%s.%N); "$@" >/dev/null; awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
counters() { # the mount's async_creates async_unlinks dirs_listed_complete
	sleep 1.2 # the stats file is written once a second
	python3 -c 'import glob, json, sys
c = json.load(open(glob.glob(sys.argv[1] + "/mounts/*.json")[0]))["counters"]
print(c.get("async_creates", 0), c.get("async_unlinks", 0), c.get("dirs_listed_complete", "-"))' "$WEFT_RUN_DIR"
}
one() { # one LABEL WEFT
	W=$2
	cleanup
	mkdir -p "$D/local" "$D/mnt"
	sync; echo 3 >/proc/sys/vm/drop_caches
	local l1 l2
	l1=$(secs sh -c "tar xf '$D/linux.tar' -C '$D/local' '$SUBSET' && sync")
	l2=$(secs sh -c "tar xf '$D/linux.tar' -C '$D/local' '$SUBSET' && sync")
	"$W" up --dir "$D/state" --mount "$D/mnt" --stores 4 --replicas 2 >/dev/null
	local w1 w2 c0 c1
	w1=$(secs sh -c "tar xf '$D/linux.tar' -C '$D/mnt' '$SUBSET' && '$W' sync '$D/mnt'")
	c0=$(counters)
	w2=$(secs sh -c "tar xf '$D/linux.tar' -C '$D/mnt' '$SUBSET' && '$W' sync '$D/mnt'")
	c1=$(counters)
	diff -r "$D/local/$SUBSET" "$D/mnt/$SUBSET" >/dev/null || { echo "$1: the tree differs" >&2; exit 1; }
	set -- "$1" $c0 $c1
	printf '%s  local %6s %6s  weft %6s %6s  over/first %.2f  over/local %.1f  creates %d of them here, unlinks %d, dirs listed %s\n' \
		"$1" "$l1" "$l2" "$w1" "$w2" "$(awk -v a="$w2" -v b="$w1" 'BEGIN { print a / b }')" \
		"$(awk -v a="$w2" -v b="$l2" 'BEGIN { print a / b }')" $(($5 - $2)) $(($6 - $3)) "$7"
	"$W" down --dir "$D/state" >/dev/null
}
echo "tar xf $SUBSET, then again over it (seconds, each with sync / weft sync)"
for r in $(seq "$RUNS"); do
	one A "$A"
	[ -z "$B" ] || one B "$B"
done
