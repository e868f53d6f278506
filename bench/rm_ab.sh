#!/usr/bin/env bash
# Traversals of an extracted kernel subtree, two builds alternately (issue 8): on a fresh
# `weft up` cluster (4 stores, replicas 2), tar xf of SUBSET and weft sync, then after
# drop_caches `du -s`, then after drop_caches `rm -rf` and weft sync; each timed, with the
# mount's directory read-ahead counters (fetched, hits) and its asynchronous removals.
#
#   bash bench/rm_ab.sh WEFT_A WEFT_B [RUNS] [SUBSET]
#
# SUBSET defaults to linux-source-6.1/drivers of /usr/src/linux-source-6.1.tar.xz. A slow
# metadata disk is modelled with WEFT_META_TEST_COMMIT_DELAY_MS=10 (meta sleeps that long
# in each commit). Needs root; run it in a network namespace of its own (ip netns exec).
set -euo pipefail
A=$1 B=$2 RUNS=${3:-3} SUBSET=${4:-linux-source-6.1/drivers}
D=${WEFT_BENCH_DIR:-/var/tmp/weft-bench-rm}
mkdir -p "$D"
[ -f "$D/linux.tar" ] || xz -dc /usr/src/linux-source-6.1.tar.xz >"$D/linux.tar"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }
counters() { sleep 1.2; python3 -c 'import glob, json, sys
c = json.load(open(glob.glob(sys.argv[1] + "/mounts/*.json")[0]))["counters"]
print(" ".join(str(c.get(k, 0)) for k in ("dir_ahead_fetched", "dir_ahead_hits", "async_unlinks", "async_rmdirs")))' "$WEFT_RUN_DIR"; }
S=
cleanup() { [ -z "$S" ] || { "$A" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"; }; }
trap cleanup EXIT
one() { # one NAME WEFT
	S=$(mktemp -d /tmp/weft-rmab.XXXXXX)
	export WEFT_RUN_DIR=$S/run
	"$2" up --dir "$S" --stores 4 --replicas 2 >/dev/null
	local M=$S/mnt tx du rm c0 c1
	tx=$(secs sh -c "tar xf '$D/linux.tar' -C '$M' '$SUBSET' && '$2' sync '$M'")
	sync; echo 3 >/proc/sys/vm/drop_caches
	du=$(secs du -s "$M")
	sync; echo 3 >/proc/sys/vm/drop_caches
	c0=$(counters)
	rm=$(secs sh -c "rm -rf '$M/${SUBSET%%/*}' && '$2' sync '$M'")
	c1=$(counters)
	echo "$c0 $c1" | awk -v n="$1" -v tx="$tx" -v du="$du" -v rm="$rm" '{
		printf "%-2s tar+sync %7s s  du -s %5s s  rm -rf+sync %6s s  read-ahead fetched %d hits %d  async unlinks %d rmdirs %d\n",
			n, tx, du, rm, $5 - $1, $6 - $2, $7 - $3, $8 - $4 }'
	"$2" down --dir "$S" >/dev/null 2>&1 || true
	rm -rf "$S"; S=
}
for r in $(seq "$RUNS"); do one A "$A"; one B "$B"; done
