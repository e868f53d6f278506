# Helpers for weft meta integration tests (sourced after lib.sh).
MC="$BUILD/tests/integration/metaclient"

# start_meta NAME DIR LISTEN [ARGS...]: starts weft meta in the foreground as a tracked
# process logging to $T/NAME.log; sets META_ADDR to the bound host:port.
start_meta() {
	local name=$1 dir=$2 listen=$3; shift 3
	: >"$T/$name.log"
	start "$name" "$WEFT" meta "$dir" --listen "$listen" -f "$@"
	local n=200
	while ! grep -q 'serving .* on ' "$T/$name.log" && [ $n -gt 0 ]; do
		kill -0 "$(eval echo \$PID_$name)" 2>/dev/null || fail "meta $name exited: $(cat "$T/$name.log")"
		sleep 0.05; n=$((n - 1))
	done
	[ $n -gt 0 ] || fail "meta $name did not start"
	META_ADDR=$(grep -o 'serving .* on [^ ]*' "$T/$name.log" | tail -1 | awk '{print $NF}')
}

# stop_meta NAME: SIGTERM and wait; it must exit 0.
stop_meta() {
	local pid; pid=$(eval echo \$PID_$1)
	kill "$pid"
	wait "$pid" || fail "meta $1 exited with status $?"
}

# check_meta_logs: like check_logs, but also passes when no log has an ERROR line.
check_meta_logs() {
	local bad
	bad=$(cat "$T"/*.log 2>/dev/null | grep ' ERROR: ' | { if [ -n "$ALLOWED_ERRORS" ]; then grep -Ev "$ALLOWED_ERRORS" || true; else cat; fi; } || true)
	[ -z "$bad" ] || fail "unexpected errors in logs:
$bad"
}
