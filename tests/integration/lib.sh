# Shared helpers for integration tests: a private directory per case, every process we
# start is killed at exit, logs are checked for unexpected errors, and a failure prints
# the command to reproduce it.
set -euo pipefail

WEFT=${WEFT:-$(cd "$(dirname "$0")/../.." && pwd)/build/weft}
BUILD=${BUILD:-$(dirname "$WEFT")}
T=$(mktemp -d /tmp/weft-test.XXXXXX)
PIDS=()
CASE=$(basename "$0")
ALLOWED_ERRORS=${ALLOWED_ERRORS:-}

cleanup() {
	local rc=$?
	# a test may define pre_cleanup (unmount, stop a cluster) to run first
	if declare -F pre_cleanup >/dev/null; then pre_cleanup || true; fi
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
	if [ $rc -ne 0 ]; then
		echo "FAILED: $CASE (logs kept in $T)"
		echo "reproduce: WEFT=$WEFT BUILD=$BUILD bash $0"
		for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
	else
		rm -rf "$T"
	fi
	exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# start NAME CMD...: runs CMD in the background with its output in $T/NAME.log
start() {
	local name=$1; shift
	"$@" >"$T/$name.log" 2>&1 &
	PIDS+=($!)
	eval "PID_$name=$!"
}

# wait_file FILE [SECONDS]
wait_file() {
	local f=$1 n=$(( ${2:-10} * 20 ))
	while [ ! -s "$f" ] && [ $n -gt 0 ]; do sleep 0.05; n=$((n - 1)); done
	[ -s "$f" ] || fail "timed out waiting for $f"
}

# check_logs: no ERROR lines except those matching $ALLOWED_ERRORS (a regex)
check_logs() {
	local bad
	bad=$({ grep -h ' ERROR: ' "$T"/*.log 2>/dev/null || true; } | { if [ -n "$ALLOWED_ERRORS" ]; then grep -Ev "$ALLOWED_ERRORS" || true; else cat; fi; })
	[ -z "$bad" ] || fail "unexpected errors in logs:
$bad"
}
