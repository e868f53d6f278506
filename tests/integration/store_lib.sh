# Helpers for weft store integration tests (sourced after lib.sh): a real meta and real
# stores on loopback with ports picked by the kernel, and the protocol test client.
SC="$BUILD/tests/integration/store_client"
KEY="$T/meta/cluster.key"

# wait_log FILE REGEX [SECONDS]: waits until a line of FILE matches REGEX
wait_log() {
	local f=$1 re=$2 n=$(( ${3:-10} * 20 ))
	while ! grep -qE "$re" "$f" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.05; n=$((n - 1)); done
	grep -qE "$re" "$f" 2>/dev/null || fail "timed out waiting for /$re/ in $f"
}

# start_meta [ARGS...]: mkfs + meta on a free port; sets META
start_meta() {
	"$WEFT" mkfs --meta "$T/meta" "$@" >/dev/null
	start meta "$WEFT" meta "$T/meta" --listen 127.0.0.1:0 -f ${META_ARGS:-}
	wait_log "$T/meta.log" 'serving .* on 127.0.0.1:[0-9]+'
	META=$(grep -oE 'serving .* on 127.0.0.1:[0-9]+' "$T/meta.log" | grep -oE '127.0.0.1:[0-9]+$' | head -1)
}

# start_store NAME [ARGS...]: a store on a free port in ${SDIR:-$T/NAME}, node NAME; sets ADDR_NAME
# and PID_NAME. A restart of NAME keeps its port.
# The objects these tests write with the raw store protocol belong to no file meta knows:
# a sweep after a chain change (src/store/sweep.c) would rightly delete them, in the
# middle of a test that checks they are intact. No sweep for an hour.
export WEFT_STORE_SWEEP_DELAY_MS=3600000
start_store() {
	local name=$1; shift
	local listen=127.0.0.1:0 addrvar="ADDR_$name"
	[ -n "${!addrvar:-}" ] && listen=${!addrvar}
	[ -f "$T/$name.log" ] && cat "$T/$name.log" >>"$T/$name.old"
	: >"$T/$name.log"
	start "$name" "$WEFT" store "${SDIR:-$T/$name}" --meta "$META" --listen "$listen" --node "$name" \
		--key "$KEY" -f "$@"
	wait_log "$T/$name.log" 'serving on .* registered as' 15
	eval "ADDR_$name=$(grep -oE 'registered as 127.0.0.1:[0-9]+' "$T/$name.log" | head -1 | grep -oE '127.0.0.1:[0-9]+')"
}

# sc STORE_ADDR CMD ARGS...: runs the test client against a store
sc() {
	local addr=$1; shift
	"$SC" ${SC_OPTS:-} "$KEY" "$META" "$addr" "$@"
}

# expect PATTERN CMD...: runs CMD, fails unless its output matches PATTERN (grep -E)
expect() {
	local want=$1; shift
	local out
	out=$("$@" 2>&1) || true
	echo "$out" | grep -qE "$want" || fail "$* -> '$out', wanted /$want/"
}

# check_logs of lib.sh exits under set -e -o pipefail when no log has an ERROR line
# (its grep finds nothing); calling it in a condition keeps its own checks.
# Also fails on sanitizer reports (ASan/UBSan/LSan print them to the daemons' logs); the
# daemons must have exited for leak reports to be written, so this stops them first.
store_check_logs() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
	PIDS=()
	check_logs || fail "check_logs"
	local san
	san=$(grep -lE 'Sanitizer|runtime error:' "$T"/*.log "$T"/*.old 2>/dev/null || true)
	[ -z "$san" ] || fail "sanitizer reports in: $san"
}
