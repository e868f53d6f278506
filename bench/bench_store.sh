#!/usr/bin/env bash
# One weft store's throughput beside dd on the same disk; checksums on and off; O_DIRECT
# writes and buffered ones. Medians of ROUNDS interleaved rounds (this kind of VM's disk
# and CPU vary a lot from minute to minute: interleaving puts every setup through the
# same weather).
# usage: bench/bench_store.sh BUILD_DIR [DATA_DIR (default /var/tmp)] [MiB (default 2048)] [ROUNDS (default 3)]
#
# Each round, on DATA_DIR's file system: dd write bs=1M conv=fsync (what the disk plus
# the page cache give a local writer) and oflag=direct (the disk alone); dd reads with
# iflag=direct (1 MiB, 8 MiB) after drop_caches; then for each store setup
#   on      checksums on, large aligned writes with O_DIRECT (the default)
#   off     a file system made with --no-checksums
#   on-buf  checksums on, `weft store --buffered` (every write through the page cache)
# bench_store writes MiB with 1 MiB and with 8 MiB requests (8 in flight, 4 objects,
# then OBJ_FSYNC of each, all timed) and, after drop_caches, reads them back. Besides
# MB/s it records the CPU seconds the store process and the client spent per GiB: the
# checksum cost shows there without the noise of wall-clock rates. Needs root (drop_caches).
#
# LINK=RATE (e.g. LINK=10gbit) puts meta and the stores in a network namespace behind a
# veth pair shaped to RATE each way (tc tbf), like a store host behind its NIC; the client
# stays in the root namespace. Without it everything talks over loopback and the store
# is CPU-bound on a small machine.
set -euo pipefail
B=$(cd "$1" && pwd); D=${2:-/var/tmp}; N=${3:-2048}; ROUNDS=${4:-3}
W=$(mktemp -d "$D/weft-bench-store.XXXXXX")
PIDS=()
NS=""
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && { kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; }; done
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
drop() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "(cannot drop caches: reads may hit the page cache)" >&2; }
# dd's rate in MB/s from its last line ("... copied, 1.2 s, 1.4 GB/s")
ddrate() { dd "$@" 2>&1 | tail -1 | awk '{v=$(NF-1); u=$NF; if (u=="GB/s") v*=1000; if (u=="kB/s") v/=1000; printf "%.0f", v}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A R   # R[name]="v1 v2 ..."
rec() { R[$1]="${R[$1]:-} $2"; }
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END{if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }
median_f() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{a[NR]=$1} END{if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

IP=127.0.0.1 RUN=()
if [ -n "${LINK:-}" ]; then
	NS=weftbench$$ IP=10.231.$(($$ % 250)).2 HOSTIP=10.231.$(($$ % 250)).1
	ip netns add "$NS"
	ip link add wb$$a type veth peer name wb$$b
	ip link set wb$$b netns "$NS"
	ip addr add "$HOSTIP/24" dev wb$$a && ip link set wb$$a up
	ip netns exec "$NS" ip addr add "$IP/24" dev wb$$b
	ip netns exec "$NS" ip link set wb$$b up
	ip netns exec "$NS" ip link set lo up
	tc qdisc add dev wb$$a root tbf rate "$LINK" burst 4mb latency 50ms
	ip netns exec "$NS" tc qdisc add dev wb$$b root tbf rate "$LINK" burst 4mb latency 50ms
	RUN=(ip netns exec "$NS")
fi

declare -A MA SA SPID KEY
start_setup() { # NAME MKFS_OPTS STORE_OPTS
	local n=$1 M="$W/meta-$1"
	"$B/weft" mkfs --meta "$M" $2 >/dev/null
	"${RUN[@]}" "$B/weft" meta "$M" --listen "$IP:0" -f >"$W/meta-$n.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do grep -q 'serving .* on' "$W/meta-$n.log" && break; sleep 0.05; done
	MA[$n]=$(grep -oE "on $IP:[0-9]+" "$W/meta-$n.log" | head -1 | cut -c4-)
	"${RUN[@]}" "$B/weft" store "$W/store-$n" --meta "${MA[$n]}" --listen "$IP:0" --node bench \
		--key "$M/cluster.key" -f $3 >"$W/store-$n.log" 2>&1 &
	SPID[$n]=$!
	PIDS+=($!)
	for _ in $(seq 100); do grep -q 'registered as' "$W/store-$n.log" && break; sleep 0.05; done
	SA[$n]=$(grep -oE "registered as $IP:[0-9]+" "$W/store-$n.log" | head -1 | cut -d' ' -f3)
	KEY[$n]="$M/cluster.key"
}
SETUPS=${SETUPS:-on off on-buf}   # env SETUPS="on off" for the checksum comparison alone
for s in $SETUPS; do
	case $s in
	on) start_setup on "" "" ;;
	off) start_setup off --no-checksums "" ;;
	on-buf) start_setup on-buf "" --buffered ;;
	esac
done
hz=$(getconf CLK_TCK)

echo "# $(nproc) CPUs; disk: $(df -T "$D" | tail -1 | awk '{print $1, $2}'); $N MiB per run; $ROUNDS rounds; ${LINK:+link $LINK each way (netns + tbf)}${LINK:-loopback}"
for r in $(seq "$ROUNDS"); do
	drop; rec dd-write-fsync "$(ddrate if=/dev/zero of="$W/dd" bs=1M count="$N" conv=fsync)"
	drop; rec dd-write-direct-1M "$(ddrate if=/dev/zero of="$W/dd" bs=1M count="$N" oflag=direct)"
	drop; rec dd-write-direct-8M "$(ddrate if=/dev/zero of="$W/dd" bs=8M count="$((N / 8))" oflag=direct)"
	drop; rec dd-read-direct-1M "$(ddrate if="$W/dd" of=/dev/null bs=1M iflag=direct)"
	drop; rec dd-read-direct-8M "$(ddrate if="$W/dd" of=/dev/null bs=8M iflag=direct)"
	rm -f "$W/dd"
	# rotate the order of the setups from round to round, so that none always runs
	# first after dd (whose file's writeback and deletion the disk may still be doing)
	read -ra all <<<"$SETUPS"; order=""
	for i in "${!all[@]}"; do order="$order ${all[$(((i + r - 1) % ${#all[@]}))]}"; done
	for s in $order; do
		for bs in 1 8; do
			opt="--bs $((bs << 20)) --total $((N << 20)) --inflight 8 --objects 4 --ino $((bs * 1000 + r))"
			[ "$s" = off ] && opt="$opt --nocrc"
			for mode in write read; do
				drop
				t0=$(cpu_ticks "${SPID[$s]}")
				out=$("$B/bench/bench_store" "${KEY[$s]}" "${MA[$s]}" "${SA[$s]}" $opt $mode) ||
					{ echo "$out"; echo "bench_store $mode ($s) failed" >&2; exit 1; }
				t1=$(cpu_ticks "${SPID[$s]}")
				echo "round $r, $s: $out" >&2
				rec "$s-$mode-${bs}M" "$(grep -oE '[0-9]+ MB/s' <<<"$out" | cut -d' ' -f1)"
				# CPU seconds per GiB: the store's, and the client's
				rec "$s-$mode-${bs}M-scpu" "$(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v n="$N" 'BEGIN{printf "%.3f", (b-a)/hz*1024/n}')"
				rec "$s-$mode-${bs}M-ccpu" "$(grep -oE 'client cpu [0-9.]+' <<<"$out" | awk -v n="$N" '{printf "%.3f", $3*1024/n}')"
			done
		done
	done
done

dd1=$(median "${R[dd-write-fsync]}")
echo
echo "| measure (MB/s, median of $ROUNDS) | 1 MiB requests | 8 MiB requests | store CPU s/GiB (1M, 8M) | client CPU s/GiB (1M, 8M) |"
echo "|---|---:|---:|---:|---:|"
echo "| dd write, conv=fsync | $dd1 | | | |"
echo "| dd write, oflag=direct | $(median "${R[dd-write-direct-1M]}") | $(median "${R[dd-write-direct-8M]}") | | |"
echo "| dd read, iflag=direct | $(median "${R[dd-read-direct-1M]}") | $(median "${R[dd-read-direct-8M]}") | | |"
for mode in write read; do
	for s in $SETUPS; do
		echo "| store $mode, $s | $(median "${R[$s-$mode-1M]}") | $(median "${R[$s-$mode-8M]}") |" \
			"$(median_f "${R[$s-$mode-1M-scpu]}"), $(median_f "${R[$s-$mode-8M-scpu]}") |" \
			"$(median_f "${R[$s-$mode-1M-ccpu]}"), $(median_f "${R[$s-$mode-8M-ccpu]}") |"
	done
done
echo
for bs in 1 8; do
	w=$(median "${R[on-write-${bs}M]}"); ddd=$(median "${R[dd-write-direct-${bs}M]}")
	rd=$(median "${R[on-read-${bs}M]}"); ddr=$(median "${R[dd-read-direct-${bs}M]}")
	awk -v b="$bs" -v w="$w" -v f="$dd1" -v d="$ddd" -v r="$rd" -v dr="$ddr" 'BEGIN{
		printf "%d MiB: store write / dd conv=fsync %.2f, / dd oflag=direct %.2f; store read / dd iflag=direct %.2f\n", b, w/f, w/d, r/dr}'
	for mode in write read; do
		on=$(median "${R[on-$mode-${bs}M]}"); off=$(median "${R[off-$mode-${bs}M]}")
		con=$(median_f "${R[on-$mode-${bs}M-scpu]}"); coff=$(median_f "${R[off-$mode-${bs}M-scpu]}")
		kon=$(median_f "${R[on-$mode-${bs}M-ccpu]}"); koff=$(median_f "${R[off-$mode-${bs}M-ccpu]}")
		awk -v b="$bs" -v m="$mode" -v on="$on" -v off="$off" -v con="$con" -v coff="$coff" -v kon="$kon" -v koff="$koff" 'BEGIN{
			printf "%d MiB %s, checksums on vs off: rate %+.1f%%, store CPU %+.1f%%, store+client CPU %+.1f%%\n",
				b, m, (on/off-1)*100, (con/coff-1)*100, ((con+kon)/(coff+koff)-1)*100}'
	done
done
