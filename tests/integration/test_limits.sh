#!/usr/bin/env bash
# Limits before trust: strangers without the key cost a socket each, not memory, CPU or
# log space. 2,000 connections announcing 16 MiB of bulk each: meta's memory grows by less
# than 64 MiB and a mount's I/O meanwhile completes. A daemon out of file descriptors
# neither spins on its listener nor floods its log, and serves again once they close.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
ALLOWED_ERRORS='authentication failed|no handshake'
FLOOD=$BUILD/tests/integration/flood

cluster_up --stores 2 --replicas 1
meta_pid=$(cat "$STATE/meta.pid")
meta_addr=$(cat "$STATE/meta.addr")
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
rss0=$(rss "$meta_pid")

# --- a flood of strangers with big headers, while a mount writes and reads
head -c $((48 << 20)) /dev/urandom >"$T/data"
"$FLOOD" "$meta_addr" 2000 bulk 6 >"$T/flood.out" &
flood_pid=$!
peak=$rss0
( cp "$T/data" "$MNT/f" && sync && cmp "$T/data" "$MNT/f" ) &
io_pid=$!
while kill -0 $flood_pid 2>/dev/null; do
	r=$(rss "$meta_pid"); [ "$r" -gt "$peak" ] && peak=$r
	sleep 0.2
done
wait $flood_pid
wait $io_pid || fail "the mount's I/O failed during the flood"
grep -q connected "$T/flood.out" || fail "flood: $(cat "$T/flood.out")"
growth=$(( (peak - rss0) / 1024 ))
[ $growth -lt 64 ] || fail "meta's RSS grew by $growth MiB under the flood"
lines=$(grep -c 'closing connection\|authentication failed\|refused' "$STATE/logs/meta.log" || true)
[ "$lines" -le 30 ] || fail "the flood wrote $lines log lines"
"$WEFT" ping "$meta_addr" --count 10 --key "$STATE/cluster.key" >/dev/null || fail "meta does not answer after the flood"
ok "2,000 strangers announcing 16 MiB each ($(cat "$T/flood.out")): meta grew $growth MiB, $lines log lines, the mount's I/O completed"

# --- out of file descriptors: no spinning listener, no log flood, service comes back
"$WEFT" mkfs --meta "$T/m2" >/dev/null
start m2 "$WEFT" meta "$T/m2" --listen 127.0.0.1:0 -f --log "$T/m2.log"
n=100; until grep -q 'serving' "$T/m2.log" 2>/dev/null || [ $n -eq 0 ]; do sleep 0.1; n=$((n - 1)); done
m2_addr=$(grep -o 'serving .* on [^ ]*' "$T/m2.log" | awk '{print $NF}')
[ -n "$m2_addr" ] || fail "second meta did not start"
used=$(ls "/proc/$PID_m2/fd" | wc -l)
prlimit --pid "$PID_m2" --nofile=$((used + 8)):$((used + 8)) || fail "prlimit"
"$FLOOD" "$m2_addr" 100 idle 5 127.0.0.3 >"$T/flood2.out" &
flood_pid=$!
sleep 1
hz=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
c0=$(cpu "$PID_m2"); sleep 3; c1=$(cpu "$PID_m2")
pct=$(( (c1 - c0) * 100 / (3 * hz) ))
[ $pct -lt 10 ] || fail "meta out of descriptors used $pct% CPU"
wait $flood_pid
lines=$(grep -c 'descriptors\|accept' "$T/m2.log" || true)
[ "$lines" -le 5 ] || fail "out of descriptors, meta logged $lines lines"
grep -q 'out of file descriptors' "$T/m2.log" || fail "meta never ran out of descriptors: the test did not test"
n=50; until "$WEFT" ping "$m2_addr" --count 3 --key "$T/m2/cluster.key" >/dev/null 2>&1 || [ $n -eq 0 ]; do sleep 0.2; n=$((n - 1)); done
[ $n -gt 0 ] || fail "meta does not serve again after the descriptors came back"
ok "out of descriptors: $pct% CPU, $lines log lines, serving again afterwards"

# --- the key file: a regular file of this user or root, never through a symlink
key=$STATE/cluster.key
ln -s "$key" "$T/link.key"
out=$("$WEFT" ping "$meta_addr" --count 1 --key "$T/link.key" 2>&1) && fail "a symlinked key was used"
echo "$out" | grep -q "symbolic link" || fail "symlinked key: unclear error: $out"
cp "$key" "$T/other.key"; chmod 600 "$T/other.key"; chown 65534 "$T/other.key"
out=$("$WEFT" ping "$meta_addr" --count 1 --key "$T/other.key" 2>&1) && fail "a key owned by another user was used"
echo "$out" | grep -q "owned by uid 65534" || fail "foreign key: unclear error: $out"
mkfifo -m 600 "$T/fifo.key"
out=$(timeout 5 "$WEFT" ping "$meta_addr" --count 1 --key "$T/fifo.key" 2>&1) && fail "a fifo was taken as a key"
echo "$out" | grep -q "not a regular file" || fail "fifo key: unclear error: $out"
printf 'precious' >"$T/target"
ln -s "$T/target" "$T/trap.key"
"$WEFT" keygen "$T/trap.key" --force 2>"$T/keygen.err" && fail "keygen --force followed a symlink"
[ "$(cat "$T/target")" = precious ] || fail "keygen --force overwrote a symlink's target"
grep -q "symbolic link" "$T/keygen.err" || fail "keygen: unclear error: $(cat "$T/keygen.err")"
ok "key files: symlinks, other owners and fifos refused with a clear error; keygen --force follows no symlink"
check_logs
