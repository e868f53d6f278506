#!/usr/bin/env bash
# A/B of meta's create rate for two builds, rounds interleaved (A B A B ...): per round
# a fresh `weft meta` of each build on a temp dir, registered fake targets, and
# bench_meta with 64 creators (exclusive CREATEs, every reply durable). Used to measure
# what meta's space management (the per-batch space check, space.c) costs.
#   bash bench/ab_meta_create.sh BUILD_A BUILD_B [ROUNDS] [FILES]
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-5} FILES=${4:-20000}
T=$(mktemp -d /tmp/weft-ab-meta.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$T"' EXIT
one() { # one NAME BUILD
	local n=$1 b=$2 d="$T/$1" pid addr
	rm -rf "$d" "$d.log"
	"$b/weft" mkfs --meta "$d" >/dev/null
	"$b/weft" meta "$d" --listen 127.0.0.1:0 -f >"$d.log" 2>&1 &
	pid=$!; PIDS+=($pid)
	for _ in $(seq 100); do grep -q serving "$d.log" && break; sleep 0.05; done
	addr=$(grep -o 'on [0-9.:]*' "$d.log" | head -1 | awk '{print $2}')
	"$b/tests/integration/metaclient" "$d/cluster.key" "$addr" register >/dev/null
	"$b/bench/bench_meta" "$d/cluster.key" "$addr" --files "$FILES" --clients 64 \
		--only-create --label "$n" | grep -v '^#'
	kill $pid; wait $pid 2>/dev/null || true
}
for r in $(seq "$ROUNDS"); do
	one A "$A"
	one B "$B"
done
