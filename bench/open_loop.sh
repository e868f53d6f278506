#!/usr/bin/env bash
# N opens of one existing file (python: open, read 100 bytes, close), on a fresh
# `weft up` cluster (4 stores, replicas 2): time, and what meta wrote meanwhile (its
# meta_db_commits counter, the stores' heartbeats served, write_bytes of /proc/PID/io).
#   bash bench/open_loop.sh [WEFT] [N]
# Run as root, ideally in its own network namespace.
set -euo pipefail
WEFT=$(readlink -f "${1:-build/weft}")
N=${2:-10000}
W=$(mktemp -d /var/tmp/weft-open.XXXXXX)
trap '"$WEFT" down --dir "$W/s" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
"$WEFT" up --dir "$W/s" --mount "$W/s/mnt" --stores 4 --replicas 2 --metrics >/dev/null
echo hello >"$W/s/mnt/f"
sync
sleep 1
m() { curl -s "http://$(cat "$W/s/meta.metrics.addr")/metrics" |
	awk -v re="$1" '$0 !~ /^#/ && $0 ~ re {s += $NF} END {print s + 0}'; }
pid=$(cat "$W/s/meta.pid")
c0=$(m meta_db_commits_total) h0=$(m 'served_requests_total.*TARGET_HEARTBEAT')
o0=$(m 'served_requests_total.*op="OPEN"') b0=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
t0=$(date +%s.%N)
python3 - "$W/s/mnt/f" "$N" <<'PY'
import os, sys
for i in range(int(sys.argv[2])):
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.read(fd, 100)
    os.close(fd)
PY
t1=$(date +%s.%N)
sleep 0.5 # the last release arrives
c1=$(m meta_db_commits_total) h1=$(m 'served_requests_total.*TARGET_HEARTBEAT')
o1=$(m 'served_requests_total.*op="OPEN"') b1=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
echo "opens $((o1 - o0)) in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s;" \
	"meta commits $((c1 - c0)), heartbeats $((h1 - h0)), meta write_bytes $((b1 - b0))"
