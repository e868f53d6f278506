#!/usr/bin/env bash
# A real server process and real client processes over loopback: thousands of pings with
# many in flight, 1 MiB bulk echoes verified byte for byte, a wrong-key client refused
# while the server keeps serving others.
. "$(dirname "$0")/lib.sh"
ALLOWED_ERRORS='authentication failed from .*: wrong cluster key'

"$WEFT" keygen "$T/key"
"$WEFT" keygen "$T/wrong"
start peer "$BUILD/tests/integration/testpeer" "$T/key" 127.0.0.1:0 "$T/port"
wait_file "$T/port"
ADDR=127.0.0.1:$(cat "$T/port")

out=$("$WEFT" ping "$ADDR" --key "$T/key" --count 20000 --inflight 64)
echo "$out"
echo "$out" | grep -q '20000 pings, 0 errors, 0 corrupt' || fail "pings"

# a long stream of echoes runs while a wrong-key client is refused
"$WEFT" ping "$ADDR" --key "$T/key" --count 300 --inflight 8 --size 1M >"$T/echo.out" 2>&1 &
ECHO=$!
if "$WEFT" ping "$ADDR" --key "$T/wrong" --count 1 2>"$T/wrong.err"; then
	fail "a client with the wrong key was served"
fi
grep -q 'wrong cluster key' "$T/wrong.err" || fail "client error does not say wrong key: $(cat "$T/wrong.err")"
wait $ECHO || fail "echo stream failed: $(cat "$T/echo.out")"
cat "$T/echo.out"
grep -q '300 echoes, 0 errors, 0 corrupt' "$T/echo.out" || fail "echoes"
grep -q 'authentication failed from 127.0.0.1:[0-9]*: wrong cluster key' "$T/peer.log" \
	|| fail "server did not log the refused client"

# a key file readable by others is refused before connecting
cp "$T/key" "$T/open.key"; chmod 644 "$T/open.key"
if "$WEFT" ping "$ADDR" --key "$T/open.key" --count 1 2>"$T/open.err"; then fail "open key used"; fi
grep -q 'accessible by group or others' "$T/open.err" || fail "open key message: $(cat "$T/open.err")"

# a malformed frame closes only that connection; the server keeps serving
printf 'GARBAGE-GARBAGE-GARBAGE-GARBAGE-GARBAGE' | timeout 5 bash -c "cat > /dev/tcp/127.0.0.1/$(cat "$T/port")" || true
"$WEFT" ping "$ADDR" --key "$T/key" --count 100 | grep -q '0 errors' || fail "server stopped serving"
ALLOWED_ERRORS="$ALLOWED_ERRORS|expected HELLO|no handshake"
check_logs
ok "transport"
