#!/usr/bin/env bash
# The cost of measuring st_blocks at close: 600 files created, written (12 bytes) and
# closed one after another on a fresh `weft up` cluster (4 stores); prints the median
# and 90th percentile close() time. Since st_blocks, a close's EXTEND waits for the data
# (the allocation comes back in the store's write reply) instead of going beside it.
# Usage (as root): bash bench/sparse_close.sh [WEFT]
set -euo pipefail
WEFT=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/weft}
S=$(mktemp -d /tmp/weft-close.XXXXXX)
trap '"$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"' EXIT
"$WEFT" up --dir "$S" --stores 4 >/dev/null
mkdir "$S/mnt/d"
python3 - "$S/mnt/d" <<'P'
import os, sys, time, statistics
d = sys.argv[1]
cl, tot = [], []
for i in range(600):
    t0 = time.perf_counter()
    fd = os.open(os.path.join(d, "f%d" % i), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"hello world\n")
    t1 = time.perf_counter()
    os.close(fd)
    t2 = time.perf_counter()
    cl.append(t2 - t1); tot.append(t2 - t0)
cl.sort(); tot.sort()
print("close median %.0f us p90 %.0f us; create+write+close median %.0f us" % (cl[300]*1e6, cl[540]*1e6, tot[300]*1e6))
P
"$WEFT" down --dir "$S" >/dev/null; rm -rf "$S"
