#!/usr/bin/env bash
# Crash test: 8 clients create, rename and unlink files as fast as they can, logging
# every acknowledged op; meta is SIGKILLed mid-stream and restarted, several rounds.
# After each restart every acknowledged op of every round is present, no op is half
# applied (a rename is either done or not), and the LMDB store opens cleanly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/meta_lib.sh"
ROUNDS=${ROUNDS:-5}

"$WEFT" mkfs --meta "$T/m" >/dev/null
KEY="$T/m/cluster.key"
start_meta meta0 "$T/m" 127.0.0.1:0
ADDR=$META_ADDR
for r in $(seq 0 $((ROUNDS - 1))); do
	"$MC" "$KEY" "$ADDR" crash "$T/ops.log" "$r" 8 >"$T/crash$r.out" 2>&1 &
	CL=$!
	n=200; while ! grep -q ready "$T/crash$r.out" && [ $n -gt 0 ]; do sleep 0.05; n=$((n-1)); done
	grep -q ready "$T/crash$r.out" || fail "crash client did not start: $(cat "$T/crash$r.out")"
	sleep "0.$((RANDOM % 7 + 3))"
	kill -9 "$(eval echo \$PID_meta$r)"
	wait "$CL" || fail "crash client failed: $(cat "$T/crash$r.out")"
	wait "$(eval echo \$PID_meta$r)" 2>/dev/null || true
	start_meta "meta$((r + 1))" "$T/m" "$ADDR"
	"$MC" "$KEY" "$ADDR" verify "$T/ops.log" || fail "round $r: state after the crash"
done
stop_meta "meta$ROUNDS"
check_meta_logs
ok "meta crash ($ROUNDS rounds)"
