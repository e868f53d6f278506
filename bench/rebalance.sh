#!/usr/bin/env bash
# Moves (issue 16): how fast a drain and a rebalance copy, and what they take from a dd
# writing through the mount at the same time. A fresh `weft up` cluster (4 stores of
# 1 GiB each by --store-capacity, replicas 2) holds 24 files of 8 MiB (192 MiB, 384 MiB
# with replicas). Runs of the same dd (256 MiB, 1 MiB blocks, conv=fsync):
#   alone; while target 2 drains (its memberships move to the 3 others); while a fifth
#   store is added and `weft rebalance --rate 0` moves memberships onto it.
# Copy rate = bytes the moves copied (the stores' "in sync (N objects copied), B bytes"
# log lines) / time from the command to the end of the moves. dd alone runs before and
# after; the copy rate is the stores' default (64 MiB/s) for the drain and uncapped
# (--rate 0) for the rebalance.
#   bash bench/rebalance.sh [WEFT]
# Run as root, ideally in its own network namespace.
set -euo pipefail
WEFT=$(readlink -f "${1:-build/weft}")
W=$(mktemp -d /var/tmp/weft-rebal.XXXXXX)
S=$W/s
trap '"$WEFT" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
"$WEFT" up --dir "$S" --mount "$S/mnt" --stores 4 --replicas 2 --store-capacity 1G >/dev/null
"$WEFT" rebalance --dir "$S" --auto off >/dev/null
M=$S/mnt
for i in $(seq 0 23); do head -c $((8 << 20)) /dev/urandom >"$M/f$i"; done
sync
ddrun() { # ddrun NAME: MB/s of a 400 MiB dd through the mount
	dd if=/dev/zero of="$M/dd.$1" bs=1M count=256 conv=fsync 2>&1 | awk '/copied/ {print $(NF-1), $NF}'
}
now() { date +%s.%N; }
echo "dd alone: $(ddrun a)"
rm "$M/dd.a"

copied() { cat "$S"/logs/store*.log | sed -n 's/.*in sync (.* objects copied), \([0-9]*\) bytes.*/\1/p' | awk '{s += $1} END {print s + 0}'; }
c0=$(copied)
t0=$(now)
ddrun b >"$W/dd.b" &
dd=$!
"$WEFT" target drain 2 --dir "$S" >/dev/null
until "$WEFT" status --dir "$S" | grep -q "draining: 0 chain memberships"; do sleep 0.2; done
t1=$(now)
wait "$dd"
bytes=$(( $(copied) - c0 ))
echo "drain of target 2: $((bytes >> 20)) MiB in $(echo "$t1 - $t0" | bc -l | cut -c1-5) s =" \
	"$(echo "$bytes / 1048576 / ($t1 - $t0)" | bc -l | cut -c1-5) MiB/s; dd meanwhile: $(cat "$W/dd.b")"

"$WEFT" target add --dir "$S" >/dev/null
c0=$(copied)
t0=$(now)
ddrun c >"$W/dd.c" &
dd=$!
"$WEFT" rebalance --dir "$S" --rate 0 --threshold 5 --wait 300 >"$W/reb.out"
t1=$(now)
wait "$dd"
moved=$(( $(copied) - c0 ))
echo "rebalance onto a fifth store: $((moved >> 20)) MiB in $(echo "$t1 - $t0" | bc -l | cut -c1-5) s" \
	"(with 8 s between moves) = $(echo "$moved / 1048576 / ($t1 - $t0)" | bc -l | cut -c1-5) MiB/s;" \
	"dd meanwhile: $(cat "$W/dd.c")"
"$WEFT" status --dir "$S" | grep -E "balance|moves"
echo "dd alone again: $(ddrun d)"
