#!/usr/bin/env bash
# Many writers at once through one mount (N-to-N, fio, 16 jobs, 48 MiB each, 1 MiB and
# 64 KiB writes, fsync at the end), on a fresh `weft up` cluster (4 stores, replicas 2).
# Used to check that the chain cache (src/net/chaincache.c) does not slow many-thread
# writes. Usage (as root): bash bench/nn_writers.sh [WEFT] [RUNS]
set -euo pipefail
WEFT=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/weft}
RUNS=${2:-1}
S=$(mktemp -d /tmp/weft-nn.XXXXXX)
trap '"$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"' EXIT
for r in $(seq "$RUNS"); do
	"$WEFT" up --dir "$S" --stores 4 --replicas 2 >/dev/null
	for bs in 1M 64k; do
		fio --name=w$bs --directory="$S/mnt" --rw=write --bs=$bs --size=48M --numjobs=16 \
			--ioengine=psync --end_fsync=1 --group_reporting --output-format=terse \
			--terse-version=3 2>/dev/null |
			awk -F';' -v bs=$bs -v r="$r" '{printf "run %s: write bs=%s, 16 jobs: %.0f MB/s\n", r, bs, $48/1024}'
		rm -f "$S"/mnt/w*
	done
	"$WEFT" down --dir "$S" >/dev/null
	rm -rf "${S:?}"/*
done
