#!/usr/bin/env bash
# Runs bench_meta against a fresh weft meta (group commit) on a temp dir, then the
# group-commit vs one-sync-per-create comparison at 64 creators.
# usage: bench/bench_meta.sh BUILD_DIR [FILES] [TMPDIR]
set -euo pipefail
B=${1:?build dir}; FILES=${2:-20000}; BASE=${3:-/tmp}
T=$(mktemp -d "$BASE/weft-bench-meta.XXXXXX")
PIDS=()
trap 'for p in "${PIDS[@]:-}"; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$T"' EXIT
start() { # NAME ARGS...: sets ADDR (not in a subshell, so PIDS is kept for the trap)
	local n=$1; shift
	"$B/weft" mkfs --meta "$T/$n" >/dev/null
	"$B/weft" meta "$T/$n" --listen 127.0.0.1:0 -f "$@" >"$T/$n.log" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 100); do grep -q serving "$T/$n.log" && break; sleep 0.05; done
	ADDR=$(grep -o 'on [0-9.:]*' "$T/$n.log" | head -1 | awk '{print $2}')
}
reg() { # fake targets so that files can be created
	"$B/tests/integration/metaclient" "$T/$1/cluster.key" "$2" register >/dev/null
}
mkdir -p "$T/local"
echo "# $(nproc) CPUs; meta dir and local dir on: $(df -T "$T" | awk 'NR==2{print $2, $1}')"
start gc; A=$ADDR; reg gc "$A"
"$B/bench/bench_meta" "$T/gc/cluster.key" "$A" --local "$T/local" --files "$FILES" --clients 1,8,64
echo "# group commit vs one sync per create, 64 creators"
start se --sync-each; S=$ADDR; reg se "$S"
"$B/bench/bench_meta" "$T/gc/cluster.key" "$A" --files "$FILES" --clients 64 --only-create --label group-commit
"$B/bench/bench_meta" "$T/se/cluster.key" "$S" --files "$((FILES / 4))" --clients 64 --only-create --label sync-each
