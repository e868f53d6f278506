#!/usr/bin/env bash
# mdtest-style metadata rates (issue 8): creates, stats and removes of empty files by
# 1, 4 and 16 processes (bench/mdrate.c: a directory per process, phase after phase), on
# the local file system (/var/tmp) and on a fresh `weft up` cluster (4 stores, replicas
# REPLICAS) through one mount and through two mounts (the processes alternate between
# them), and on the null FUSE file system (bench/nullfuse.c: answers every request at
# once, mounted with default_permissions as weft's mount is: the floor FUSE sets on
# this machine), all in the same run. TOTAL files per row, split among the processes.
# Usage (as root, in a network namespace of its own):
#   bash bench/mdrate.sh [BUILD] [TOTAL] [REPLICAS] [P...]
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
TOTAL=${2:-8000}
REPLICAS=${3:-2}
shift 3 2>/dev/null || shift $#
PS=${*:-1 4 16}
WEFT=$BUILD/weft
MDRATE=$BUILD/bench/mdrate
NULLFUSE=$BUILD/bench/nullfuse
S=$(mktemp -d /tmp/weft-mdrate.XXXXXX)
LOCAL=$(mktemp -d /var/tmp/weft-mdrate-local.XXXXXX)
OUT=$S.results
cleanup() {
	umount "$S/null" 2>/dev/null || true
	umount "$S/mnt2" 2>/dev/null || true
	"$WEFT" down --dir "$S" >/dev/null 2>&1 || true
	rm -rf "$S" "$LOCAL" "$OUT"
}
trap cleanup EXIT
"$WEFT" up --dir "$S" --stores 4 --replicas "$REPLICAS" >/dev/null
M=$S/mnt
mkdir -p "$S/mnt2"
"$WEFT" mount "$(cat "$S/meta.addr")" "$S/mnt2" \
	--key "$S/cluster.key" -o allow_other,no_root_squash --pid-file "$S/mount2.pid" \
	--log "$S/mount2.log"
mkdir -p "$S/null"
"$NULLFUSE" "$S/null" --files 1 --size 4096 --default-permissions
for _ in $(seq 50); do mountpoint -q "$S/null" && break; sleep 0.1; done

run() { # run LABEL P DIR...: one mdrate, its three rates into $OUT
	local label=$1 p=$2; shift 2
	"$MDRATE" "$p" $((TOTAL / p)) "$@" | while read -r phase _ _ _ _ _ _ rate _; do
		echo "$phase|$p|$label|$rate" >>"$OUT"
		echo "$label, $p procs, $phase: $rate ops/s"
	done
}
: >"$OUT"
for p in $PS; do
	mkdir -p "$LOCAL/$p" "$M/one$p" "$M/two$p" "$S/null/$p"
	run local "$p" "$LOCAL/$p"
	run "null FUSE" "$p" "$S/null/$p"
	run "weft, 1 mount" "$p" "$M/one$p"
	run "weft, 2 mounts" "$p" "$M/two$p" "$S/mnt2/two$p"
done

echo
echo "| phase | procs | local ops/s | null FUSE | weft 1 mount | /local | /null | weft 2 mounts | /local | /null |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -F'|' '{ v[$1, $2, $3] = $4; if (!(($1, $2) in seen)) { seen[$1, $2] = 1; k[++n] = $1 "|" $2 } }
	END { for (i = 1; i <= n; i++) { split(k[i], a, "|"); l = v[a[1], a[2], "local"]
		z = v[a[1], a[2], "null FUSE"]; o = v[a[1], a[2], "weft, 1 mount"]
		t = v[a[1], a[2], "weft, 2 mounts"]
		printf "| %s | %s | %d | %d | %d | %.2f | %.2f | %d | %.2f | %.2f |\n", a[1], a[2], l, z,
			o, o / l, o / z, t, t / l, t / z } }' "$OUT"
echo "weft: 4 stores, replicas $REPLICAS, this machine; local: $LOCAL ($(df -T "$LOCAL" | awk 'NR==2 {print $2}'))"
