#!/usr/bin/env bash
# The protected wire (issue 13 item 4), with a man in the middle (relay.c) between a
# mount and its store: the store advertises the relay's address, so every connection to
# it (the mount's, meta's) goes through the relay.
#  - integrity (mkfs's default): weft status shows it; the relay flips one byte in the
#    bulk of a frame after the handshake, once during a write and once during a read:
#    the receiver refuses the frame with one line naming the peer, the connection is
#    closed and made again (the relay sees a new one), and the file reads back intact.
#  - a downgrade: the relay sets the wire bytes of HELLO (and its reply) to 0; the
#    store refuses the handshake, since the levels are in its proofs.
#  - privacy: a capture of a file written through the relay holds no 64-byte window of
#    its plaintext; at level none the same capture does (so the check can fail).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store_lib.sh"

RELAY="$BUILD/tests/integration/relay"
MNT=$T/mnt
ALLOWED_ERRORS='fails its integrity check|authentication failed from|wrong cluster key'

pre_cleanup() {
	mountpoint -q "$MNT" 2>/dev/null && { umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true; }
	# a mount left behind by a failure ends, so that a writer waiting on it gets an error
	# instead of keeping the cleanup's wait forever
	[ -s "$T/mount.pid" ] && kill "$(cat "$T/mount.pid")" 2>/dev/null
	return 0
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# up LEVEL: mkfs --wire LEVEL (none given: the default), meta, a relay (capturing to
# $T/cap.LEVEL) in front of one store, and a mount; sets META, RELAY_PID
up() {
	local level=$1 sport
	rm -rf "$T/meta" "$T/st"
	if [ "$level" = default ]; then start_meta; else start_meta --wire "$level"; fi
	sport=$(free_port)
	: >"$T/relay.$level.log"; rm -f "$T/relay.$level.out"
	"$RELAY" "127.0.0.1:$sport" "$T/cap.$level" "$T/relay.ctl" >"$T/relay.$level.out" 2>>"$T/relay.$level.log" &
	RELAY_PID=$!
	PIDS+=($RELAY_PID)
	wait_file "$T/relay.$level.out"
	local raddr; raddr=$(awk '{print $NF}' "$T/relay.$level.out")
	: >"$T/st.log"
	start st "$WEFT" store "$T/st" --meta "$META" --listen "127.0.0.1:$sport" --advertise "$raddr" \
		--node st --key "$KEY" -f
	wait_log "$T/st.log" 'serving on .* registered as' 15
	mkdir -p "$MNT"
	"$WEFT" mount "$META" "$MNT" --key "$KEY" -o no_root_squash --pid-file "$T/mount.pid" \
		--log "$T/mount.$level.log" || fail "mount failed: $(tail -3 "$T/mount.$level.log")"
}

down() {
	umount "$MNT" || umount -l "$MNT"
	rm -f "$T/mount.pid"
	kill "$PID_st" "$PID_meta" "$RELAY_PID" 2>/dev/null || true
	wait "$PID_st" "$PID_meta" "$RELAY_PID" 2>/dev/null || true
	[ -f "$T/meta.log" ] && mv "$T/meta.log" "$T/meta.$1.log"
	[ -f "$T/st.log" ] && mv "$T/st.log" "$T/st.$1.log"
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
conns() { grep -c 'accepted' "$T/relay.$1.log" || true; }

head -c $((48 << 20)) /dev/urandom >"$T/src"
WANT=$(sha "$T/src")

# ---- integrity, the default: a flipped byte is refused, the connection made again ----
flips() { # flips CIPHER: the two flips on a fresh cluster at the default level
rm -f "$T/w.rc" "$T/r.sha" "$MNT/w" 2>/dev/null || true
up default
"$WEFT" status --meta "$META" --key "$KEY" | grep -q "^wire: integrity ($1 " || \
	fail "weft status does not show integrity with $1: $("$WEFT" status --meta "$META" --key "$KEY")"
"$WEFT" status --meta "$META" --key "$KEY" --json | grep -q '"level": *"integrity"' || fail "status --json: no wire level"
ok "mkfs's default level is integrity, shown by weft status ($1)"

dd if="$T/src" of="$MNT/a" bs=1M conv=fsync status=none || fail "dd through the relay"
[ "$(sha "$MNT/a")" = "$WANT" ] || fail "file a differs before any flip"

# a flip during a write: the store refuses the frame from the mount
n0=$(conns default)
( dd if="$T/src" of="$MNT/w" bs=1M conv=fsync status=none; echo $? >"$T/w.rc" ) &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$MNT/w" ] 2>/dev/null && break; sleep 0.05; done
kill -USR1 "$RELAY_PID"
wait_file "$T/w.rc" 60
[ "$(cat "$T/w.rc")" = 0 ] || fail "dd saw an error across the refused frame"
wait_log "$T/relay.default.log" 'flipping byte' 5
grep -q 'client to server' "$T/relay.default.log" || fail "the flip was not on a write: $(grep flipping "$T/relay.default.log")"
wait_log "$T/st.log" 'frame [0-9]+ from 127.0.0.1:[0-9]+ \(client "[^"]*"\) fails its integrity check' 10
[ "$(grep -c 'fails its integrity check' "$T/st.log")" = 1 ] || fail "not one refusal line in the store's log"
n1=$(conns default)
[ "$n1" -gt "$n0" ] || fail "no new connection after the refusal ($n0 -> $n1)"
echo 3 >/proc/sys/vm/drop_caches
[ "$(sha "$MNT/w")" = "$WANT" ] || fail "file w corrupted by the flipped frame"
grep -h 'flipping byte' "$T/relay.default.log" | sed 's/^/  /'
grep -h 'fails its integrity check' "$T/st.log" | sed 's/^/  /'
ok "a byte flipped in a write is refused by the store (one line), the mount reconnects, the file is intact"

# a flip during a read: the mount refuses the store's reply
echo 3 >/proc/sys/vm/drop_caches
( sha "$MNT/a" >"$T/r.sha" ) &
PIDS+=($!)
sleep 0.05
kill -USR1 "$RELAY_PID"
wait_file "$T/r.sha" 60
[ "$(cat "$T/r.sha")" = "$WANT" ] || fail "read through the relay returned other data"
wait_log "$T/relay.default.log" 'flipping byte .*server to client' 5
wait_log "$T/mount.default.log" 'frame [0-9]+ from 127.0.0.1:[0-9]+ \(store "[^"]*"\) fails its integrity check' 10
[ "$(conns default)" -gt "$n1" ] || fail "no new connection after the refused reply"
grep -h 'flipping byte .*server to client' "$T/relay.default.log" | sed 's/^/  /'
grep -h 'fails its integrity check' "$T/mount.default.log" | sed 's/^/  /'
ok "a byte flipped in a read reply is refused by the mount, which reconnects; the read is right"

# a downgrade on the way: the relay sets the wire byte of new connections' HELLO (and of
# the reply) to 0; both are in the handshake's proofs, so the store refuses the proof.
# (weft ping learns no level from meta: its HELLO asks for none, with AES-NI, 0x80; the
# store's reply says integrity, 0x81. Without AES the HELLO byte is 0 already.)
if [ "$1" = AES-256-GCM ]; then
for how in hello both; do
	echo $how >"$T/relay.ctl"
	if "$WEFT" ping "$(awk '{print $NF}' "$T/relay.default.out")" --key "$KEY" --count 1 >"$T/ping.out" 2>&1; then
		fail "a connection whose wire bytes were changed ($how) was accepted"
	fi
	wait_log "$T/relay.default.log" "wire byte .* of the HELLO set to 0" 5
done
: >"$T/relay.ctl"
"$WEFT" ping "$(awk '{print $NF}' "$T/relay.default.out")" --key "$KEY" --count 1 >"$T/ping.out" 2>&1 || \
	fail "ping through the relay: $(cat "$T/ping.out")"
[ "$(grep -c 'authentication failed from .*wrong cluster key or credential' "$T/st.log")" -ge 2 ] || \
	fail "the store did not refuse the changed wire bytes: $(grep -i auth "$T/st.log")"
ok "a man in the middle cannot lower the wire level: the store refuses the handshake"
fi
down default
mv "$T/relay.default.log" "$T/relay.$1.log"; mv "$T/mount.default.log" "$T/mount.$1.log"
}
flips AES-256-GCM
# as on a CPU without AES-NI (each process decides from the environment)
WEFT_WIRE_NO_AES=1 flips Poly1305

# ---- privacy: no plaintext on the path; none: the plaintext is there ----
head -c $((2 << 20)) /dev/urandom >"$T/secret"
# finds(CAPTURE): whether any 64-byte window of the secret is in CAPTURE. Each such window
# holds a whole 32-byte block of the secret at a multiple of 32, so those are looked for.
finds() {
	python3 - "$T/secret" "$1" <<'EOF'
import sys
sec = open(sys.argv[1], 'rb').read()
cap = open(sys.argv[2], 'rb').read()
blocks = {sec[i:i + 32] for i in range(0, len(sec) - 31, 32)}
print(sum(1 for i in range(len(cap) - 31) if cap[i:i + 32] in blocks))
EOF
}
capture() { # capture LEVEL CIPHER
	local level=$1
	up $level
	"$WEFT" status --meta "$META" --key "$KEY" | grep -q "^wire: $level$2" || fail "status does not show $level$2"
	cp "$T/secret" "$MNT/secret" && sync "$MNT/secret" || fail "write at $level"
	echo 3 >/proc/sys/vm/drop_caches
	[ "$(sha "$MNT/secret")" = "$(sha "$T/secret")" ] || fail "read back at $level"
	down $level
	[ "$(stat -c %s "$T/cap.$level")" -gt $((7 << 19)) ] || fail "capture at $level too small: $(stat -c %s "$T/cap.$level")"
	hits=$(finds "$T/cap.$level")
	if [ $level = privacy ]; then
		[ "$hits" = 0 ] || fail "$hits blocks of plaintext in the capture at privacy"
		ok "privacy$2): the capture of a write and a read ($(stat -c %s "$T/cap.$level") bytes) holds none of the file"
	else
		[ "$hits" -gt 1000 ] || fail "only $hits blocks of plaintext in the capture at none: the check is blind"
		ok "none: the same capture holds the file in clear ($hits blocks), so the privacy check can fail"
	fi
	mv "$T/cap.$level" "$T/cap.$level.$(date +%s%N)"
}
capture privacy " (AES-256-GCM"
WEFT_WIRE_NO_AES=1 capture privacy " (ChaCha20-Poly1305"
capture none ""

# ---- none: the CRCs guard the way ----
# Under a tag the CRCs are left to the store (it computes them from what it received and
# checks them reading the disk; the tag covers the way). At none they are all that guards
# the way, so the mount sends them with a write and checks them on a read: a byte flipped
# either way must be caught by them, and the application sees the right data.
up none
cp "$T/src" "$MNT/a" && sync "$MNT/a" || fail "write at none"
rm -f "$T/w.rc"
( dd if="$T/src" of="$MNT/w" bs=1M conv=fsync status=none; echo $? >"$T/w.rc" ) &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$MNT/w" ] 2>/dev/null && break; sleep 0.05; done
kill -USR1 "$RELAY_PID"
wait_file "$T/w.rc" 60
[ "$(cat "$T/w.rc")" = 0 ] || fail "dd at none saw an error across the flipped write"
wait_log "$T/relay.none.log" 'flipping byte .*client to server' 5
wait_log "$T/mount.none.log" 'does not match its checksum' 10
wait_log "$T/mount.none.log" 'sending it again' 10
echo 3 >/proc/sys/vm/drop_caches
[ "$(sha "$MNT/w")" = "$WANT" ] || fail "file w corrupted by the flipped write at none"
grep -h 'does not match its checksum\|sending it again' "$T/mount.none.log" | head -2 | sed 's/^/  /'
ok "none: a byte flipped in a write fails the store's CRC check and is sent again; the file is intact"
echo 3 >/proc/sys/vm/drop_caches
( sha "$MNT/a" >"$T/r.sha" ) &
PIDS+=($!)
sleep 0.05
kill -USR1 "$RELAY_PID"
wait_file "$T/r.sha" 60
[ "$(cat "$T/r.sha")" = "$WANT" ] || fail "read at none with a flipped byte returned other data"
wait_log "$T/relay.none.log" 'flipping byte .*server to client' 5
wait_log "$T/mount.none.log" 'checksum mismatch' 10
grep -h 'checksum mismatch' "$T/mount.none.log" | head -1 | sed 's/^/  /'
ok "none: a byte flipped in a read reply fails the mount's CRC check and is read again; the read is right"
down none

check_logs
