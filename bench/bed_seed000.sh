#!/usr/bin/env bash
# Seed 000 as GPFS ran it, on the multi-host bed (tests/bed): 8 hosts (meta, 6 stores,
# one client), every link shaped to RATE (default 1gbit, tbf on both ends of each veth),
# `dd if=/dev/zero of=F bs=1M count=MB conv=fsync` from the client host into a
# replicas-1 and a replicas-2 directory, the read back, and the bytes each host sent
# per byte written; against a raw TCP stream between two hosts of the same bed in the
# same run (the iperf-style rate: dd into a socket, drained by a python sink).
#
#   sudo bash bench/bed_seed000.sh [MB] [RATE]      (default 2048 1gbit)
#
# The bed is namespaces on one machine: every "link" is a veth shaped by tbf and every
# byte still crosses the same CPUs, so results are indicative. Needs root.
set -uo pipefail
cd "$(dirname "$0")/.."
MB=${1:-2048}
RATE=${2:-1gbit}
export WEFT=${WEFT:-$PWD/build/weft}
source tests/integration/lib.sh
set +e
source tests/bed/bed.sh
BED=${BED:-b0$$-}
source tests/bed/cluster.sh
trap 'exit 143' TERM INT HUP
pre_cleanup() { bedc_down; }

bedc_up 6 --stripe-count 0 --stripe-unit 1M
bed_shape "$RATE" || fail "tbf shaping"
C=$BEDC_CLIENT
mkdir -p "$MNT/r1" "$MNT/r2"
bedc_weft setstripe "$MNT/r1" --replicas 1 >/dev/null || fail setstripe
bedc_weft setstripe "$MNT/r2" --replicas 2 >/dev/null || fail setstripe

now() { date +%s.%N; }
mbps() { awk -v b="$1" -v s="$2" 'BEGIN {printf "%.1f", b / s / 1e6}'; }

# iperf-style: MB from the client host to host 2 over one TCP stream
start sink $(bed_in 2) python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5001)); s.listen(1)
while True:
    c, _ = s.accept()
    while c.recv(1 << 20): pass
    c.close()'
bedc_wait_port 2 5001
t0=$(now)
bed_exec "$C" bash -c "dd if=/dev/zero bs=1M count=$MB 2>/dev/null > /dev/tcp/$(bed_ip 2)/5001"
t1=$(now)
LINK=$(mbps $((MB << 20)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
kill "$PID_sink" 2>/dev/null

declare -A W R SENT
for r in 1 2; do
	declare -A before
	for ((h = 1; h <= C; h++)); do before[$h]=$(bed_tx_bytes $h); done
	t0=$(now)
	dd if=/dev/zero of="$MNT/r$r/f" bs=1M count="$MB" conv=fsync 2>/dev/null || fail "dd replicas $r"
	t1=$(now)
	W[$r]=$(mbps $((MB << 20)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
	line=""
	for ((h = 1; h <= C; h++)); do
		d=$(( $(bed_tx_bytes $h) - before[$h] ))
		line+=$(awk -v d="$d" -v b=$((MB << 20)) -v h="$h" 'BEGIN {printf " h%d=%.2f", h, d / b}')
	done
	SENT[$r]=$line
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	dd if="$MNT/r$r/f" of=/dev/null bs=1M 2>/dev/null || fail "read replicas $r"
	t1=$(now)
	R[$r]=$(mbps $((MB << 20)) "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
	rm -f "$MNT/r$r/f"
done

echo "seed 000 on the bed: $MB MiB, links $RATE (tbf), 6 stores, stripe over all chains"
printf "%-28s %10s %8s\n" "" "MB/s" "ratio"
printf "%-28s %10s %8s\n" "TCP stream client->store" "$LINK" "1.00"
for r in 1 2; do
	printf "%-28s %10s %8s\n" "dd write replicas $r" "${W[$r]}" "$(awk -v a="${W[$r]}" -v b="$LINK" 'BEGIN {printf "%.2f", a / b}')"
done
printf "%-28s %10s %8s\n" "replicas 2 / replicas 1" "" "$(awk -v a="${W[2]}" -v b="${W[1]}" 'BEGIN {printf "%.2f", a / b}')"
for r in 1 2; do
	printf "%-28s %10s %8s\n" "dd read replicas $r" "${R[$r]}" "$(awk -v a="${R[$r]}" -v b="$LINK" 'BEGIN {printf "%.2f", a / b}')"
done
for r in 1 2; do echo "bytes sent per byte written, replicas $r (h1 meta, h2-h7 stores, h$C client):${SENT[$r]}"; done
