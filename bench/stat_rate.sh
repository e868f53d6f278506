#!/usr/bin/env bash
# stat rate from one mount, warm: N files in one directory, stat'ed by one process for
# SECS seconds (python os.stat loop), on weft up --replicas 1. The kernel answers stats
# from its cache while the attributes are valid: before leases for attr_timeout (1 s),
# with leases for what is left of the lease (5 s by default), so the rate shows how
# often a stat still reaches meta.
# usage: bench/stat_rate.sh [WEFT binary] [N files] [SECS]
set -euo pipefail
WEFT=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/weft}
N=${2:-1000}
SECS=${3:-10}
T=$(mktemp -d /tmp/weft-statrate.XXXXXX)
trap '"$WEFT" down --dir "$T/state" >/dev/null 2>&1 || true; rm -rf "$T"' EXIT
"$WEFT" up --dir "$T/state" --mount "$T/mnt" --replicas 1 >/dev/null
mkdir "$T/mnt/d"
python3 - "$T/mnt/d" "$N" "$SECS" <<'PY'
import os, sys, time
d, n, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
names = [os.path.join(d, "f%d" % i) for i in range(n)]
for p in names: open(p, "w").close()
for p in names: os.stat(p)
count, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    for p in names: os.stat(p)
    count += n
dt = time.monotonic() - t0
print("%d stats in %.1f s: %.0f stat/s (%d files, one process)" % (count, dt, count / dt, n))
PY
