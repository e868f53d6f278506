#!/usr/bin/env bash
# tar xf of a kernel subtree onto a fresh weft up cluster, for two builds alternately,
# beside the same extraction onto local ext4 in each run (seed 004's command, issue 8).
#
#   bash bench/tar_ab.sh WEFT_A WEFT_B [RUNS] [SUBSET] [REPLICAS]
#
# WEFT_A/B: weft binaries (e.g. a base build and this one); RUNS (default 3) pairs;
# SUBSET (default linux-source-6.1/fs) of /usr/src/linux-source-6.1.tar.xz; REPLICAS
# (default 2). Prints one row per run and build: seconds for tar xf and for the weft
# sync after it, local ext4's tar xf + sync in the same run, the ratio, and meta's
# requests and syncs per entry (its metrics). $WEFT_UP_MOUNT_OPTS is passed to weft up
# (as "A_OPTS|B_OPTS" to give each build its own). Needs root; run it in a network
# namespace of its own (ip netns exec), one benchmark at a time.
set -euo pipefail
A=$1 B=$2 RUNS=${3:-3} SUBSET=${4:-linux-source-6.1/fs} REPLICAS=${5:-2}
D=${WEFT_BENCH_DIR:-/var/tmp/weft-bench-tar}
TARBALL=/usr/src/linux-source-6.1.tar.xz
OPTS=${WEFT_UP_MOUNT_OPTS:-}
OPTS_A=${OPTS%%|*} OPTS_B=${OPTS#*|}
mkdir -p "$D"
[ -f "$D/linux.tar" ] || xz -dc "$TARBALL" >"$D/linux.tar"
entries=$(tar tf "$D/linux.tar" "$SUBSET" | wc -l)

secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }
metric() { curl -s "http://$(cat "$D/state/meta.metrics.addr")/metrics" |
	awk -v re="$1" '$0 !~ /^#/ && $0 ~ re {s += $NF} END {print s + 0}'; }
cleanup() { "$A" down --dir "$D/state" >/dev/null 2>&1 || true; }
trap cleanup EXIT

local_run() {
	rm -rf "$D/local"; mkdir -p "$D/local"; sync
	secs sh -c "tar xf '$D/linux.tar' -C '$D/local' $SUBSET && sync"
}

one() { # one NAME WEFT OPTS
	local name=$1 w=$2 opts=$3
	rm -rf "$D/state" "$D/mnt"; mkdir -p "$D/mnt"
	WEFT_UP_MOUNT_OPTS=$opts "$w" up --dir "$D/state" --mount "$D/mnt" --stores 4 \
		--replicas "$REPLICAS" --metrics >/dev/null
	sync
	local r0 s0 r1 s1 t ts loc
	r0=$(metric 'weft_served_requests_total.*op="(LOOKUP|GETATTR|CREATE_OPEN|SETATTR|EXTEND|RELEASE|MKDIR)"')
	s0=$(metric 'weft_meta_db_syncs_total')
	t=$(secs tar xf "$D/linux.tar" -C "$D/mnt" "$SUBSET")
	ts=$(secs "$w" sync "$D/mnt")
	r1=$(metric 'weft_served_requests_total.*op="(LOOKUP|GETATTR|CREATE_OPEN|SETATTR|EXTEND|RELEASE|MKDIR)"')
	s1=$(metric 'weft_meta_db_syncs_total')
	"$w" down --dir "$D/state" >/dev/null
	loc=$(local_run)
	awk -v n="$name" -v t="$t" -v ts="$ts" -v l="$loc" -v r=$((r1 - r0)) -v s=$((s1 - s0)) -v e="$entries" \
		'BEGIN { printf "| %s | %.2f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", n, t, ts, l, (t + ts) / l, r / e, s / e }'
}

echo "tar xf $SUBSET ($entries entries), weft up --stores 4 --replicas $REPLICAS"
echo "| build | tar xf (s) | weft sync (s) | local tar xf + sync (s) | weft/local | meta requests per entry | meta syncs per entry |"
echo "|---|---|---|---|---|---|---|"
for run in $(seq "$RUNS"); do
	one "A $run" "$A" "$OPTS_A"
	one "B $run" "$B" "$OPTS_B"
done
