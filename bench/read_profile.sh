#!/usr/bin/env bash
# Where a single-stream read waits (issue 17): on a fresh `weft up` cluster (4 stores),
# a file of SIZE in a replicas R directory is read once with dd bs=1M after drop_caches
# while perf watches, and this prints:
#  - the FUSE READ requests the kernel sent to the mount (fuse:fuse_request_send/end
#    tracepoints of this mount's connection only): count, mean size, how many were in
#    flight (time-weighted mean and max), mean time in the mount;
#  - libweft's OBJ_READ calls to the stores (the mount's stats file): count, mean size,
#    mean in flight (sum of latencies / elapsed, Little's law) and mean latency;
#  - CPU used by the mount and each store (/proc/PID/stat), per second and per GiB read
#    (the latter depends little on what else the machine runs), and its idle time.
# OFFCPU=1 adds perf trace -s of the mount's threads: calls of each syscall and the time
# its threads sat in it (blocked in futex = waiting for data; in read = idle).
# Usage (as root): [OFFCPU=1] bash bench/read_profile.sh [BUILD] [SIZE_MIB] [REPLICAS]
set -euo pipefail
BUILD=${1:-$(cd "$(dirname "$0")/.." && pwd)/build}
MIB=${2:-2048}
R=${3:-1}
WEFT=$BUILD/weft
S=$(mktemp -d /tmp/weft-rp.XXXXXX)
export WEFT_RUN_DIR=$S/run
trap '"$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"' EXIT
"$WEFT" up --dir "$S" --stores 4 >/dev/null
M=$S/mnt
mkdir "$M/d"
"$WEFT" setstripe "$M/d" --replicas "$R" --dir "$S" >/dev/null
"$BUILD/bench/pattern" gen $((MIB << 20)) 17 | dd of="$M/d/f" bs=1M iflag=fullblock conv=fsync status=none
mpid=$(cat "$S/mount.pid")
dev=$(mountpoint -d "$M")
conn=$(( (${dev%%:*} << 20) | ${dev##*:} ))
sf=$(ls "$WEFT_RUN_DIR"/mounts/*.json)
sync; echo 3 >/proc/sys/vm/drop_caches
sleep 1.2; cp "$sf" "$S/before.json"
perf record -q -o "$S/fuse.data" -e fuse:fuse_request_send,fuse:fuse_request_end -a 2>/dev/null &
p1=$!
spids=$(cat "$S"/store*.pid)
cpu() { for p in $mpid $spids; do awk '{print $14 + $15}' /proc/$p/stat; done | paste -sd' '; }
if [ -n "${OFFCPU:-}" ]; then # syscalls of the mount's threads, with time spent in them
	perf trace -s -p "$mpid" -o "$S/trace.out" 2>/dev/null &
	p3=$!
fi
sleep 1
t0=$(date +%s.%N); c0=$(cpu); idle0=$(awk '/^cpu /{print $5 + $6}' /proc/stat)
dd if="$M/d/f" of=/dev/null bs=1M 2>"$S/dd.out"
t1=$(date +%s.%N); c1=$(cpu); idle1=$(awk '/^cpu /{print $5 + $6}' /proc/stat)
kill -INT $p1 ${p3:-}; wait $p1 ${p3:-} 2>/dev/null || true
sleep 1.2; cp "$sf" "$S/after.json"
echo "dd: $(grep copied "$S/dd.out")"
perf script -i "$S/fuse.data" -F time,event,trace 2>/dev/null | awk -v conn="$conn" -v mib="$MIB" '
	{ t = $1 + 0; for (i = 1; i <= NF; i++) { if ($i == "connection") c = $(i+1); if ($i == "req") u = $(i+1) } }
	c != conn { next }
	/fuse_request_send/ && /FUSE_READ\)/ { start[u] = t; n++; if (last) area += inflight * (t - last); last = t;
		if (!first) first = t; inflight++; if (inflight > max) max = inflight; next }
	/fuse_request_end/ && (u in start) { area += inflight * (t - last); last = t; inflight--;
		lat += t - start[u]; delete start[u]; m++ }
	END { printf "FUSE READ requests: %d, mean size %.0f KiB, in flight: mean %.1f max %d, mean time in the mount %.2f ms\n",
		n, mib * 1024 / n, area / (last - first), max, lat / m * 1000 }'
python3 - "$S/before.json" "$S/after.json" "$t0" "$t1" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
dt = float(sys.argv[4]) - float(sys.argv[3])
g = lambda d: d.get("called", {}).get("OBJ_READ", {"ops": 0, "bytes_in": 0, "latency_sum_us": 0})
x, y = g(a), g(b)
n = y["ops"] - x["ops"]; by = y["bytes_in"] - x["bytes_in"]; lat = y["latency_sum_us"] - x["latency_sum_us"]
print("OBJ_READ calls: %d, mean %.0f KiB, in flight (all stores): mean %.1f, mean latency %.2f ms"
      % (n, by / max(n, 1) / 1024, lat / 1e6 / dt, lat / max(n, 1) / 1000))
ca, cb = a["counters"], b["counters"]
print("readahead hits %d of %d FUSE reads" % (cb["readahead_hits"] - ca["readahead_hits"],
      cb["fuse_read_ops"] - ca["fuse_read_ops"]))
PY
hz=$(getconf CLK_TCK)
echo "$c0" "$c1" | awk -v t="$t1 - $t0" -v hz="$hz" -v i0="$idle0" -v i1="$idle1" -v ts="$t0" -v te="$t1" -v gib="$(awk -v m="$MIB" 'BEGIN { print m / 1024 }')" '{
	n = NF / 2; dt = te - ts; printf "CPU (%% of one core): mount %.0f", ($(n+1) - $1) / hz / dt * 100
	for (k = 2; k <= n; k++) { printf ", store %.0f", ($(n+k) - $k) / hz / dt * 100; st += $(n+k) - $k }
	printf "; machine idle %.0f%% of 2 cores\n", (i1 - i0) / hz / dt / 2 * 100
	printf "CPU per GiB read: mount %.2f s, stores %.2f s\n", ($(n+1) - $1) / hz / gib, st / hz / gib }'
if [ -n "${OFFCPU:-}" ]; then
	# per syscall over all the mount's threads: calls, total ms (the time threads sat in it)
	awk '$1 ~ /^[a-z_0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 8 { n[$1] += $2; t[$1] += $4 }
		END { for (k in n) printf "%s %d %.0f\n", k, n[k], t[k] }' "$S/trace.out" |
		sort -k3 -nr | head -8 | awk 'BEGIN { printf "mount syscalls (calls, ms summed over threads):" }
		{ printf " %s %d/%s", $1, $2, $3 } END { print "" }'
fi
