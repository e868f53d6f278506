#!/usr/bin/env bash
# Chain replication across three real stores and a real meta on loopback:
#
#   store_client --OBJ_WRITE--> s(head) --forward--> s(middle) --forward--> s(tail)
#                <---reply----           <--reply---            <--reply---
#
# Replicated writes, truncates and fsyncs land on every member; then the middle store is
# SIGKILLed during a stream of 1 MiB writes: the writer gets an error naming it, every
# acknowledged block is intact on the head and the tail, and the killed store, restarted,
# recognises the objects the kill tore. Last, a tail that stops answering (SIGSTOP) makes
# a write fail after the forward timeout, naming it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store_lib.sh"
ALLOWED_ERRORS='successor target [0-9]+ .* failed'
start_meta
start_store s1; start_store s2; start_store s3
declare -A NAME
for s in s1 s2 s3; do
	a="ADDR_$s"
	id=$(sc "${!a}" stats | sed -E 's/^target=([0-9]+) .*/\1/')
	NAME[$id]=$s
done
wait_log "$T/s1.log" 'chain tables version .* 3 targets' 10
SC_OPTS="-r 3"
CH=$(sc "$ADDR_s1" chain)
echo "$CH"
CHID=$(echo "$CH" | sed -E 's|chain 3/([0-9]+) .*|\1|')
read -r HEAD MID TAIL < <(echo "$CH" | sed -E 's/.*members ([0-9]+):[0-9],([0-9]+):[0-9],([0-9]+):[0-9].*/\1 \2 \3/')
H=${NAME[$HEAD]}; M=${NAME[$MID]}; L=${NAME[$TAIL]}
[ "$H" = s1 ] || fail "chain $CHID is not headed by s1: $CH"
a="ADDR_$H"; AH=${!a}; a="ADDR_$M"; AM=${!a}; a="ADDR_$L"; AL=${!a}
echo "chain 3/$CHID: head $H ($AH), middle $M ($AM), tail $L ($AL)"

# a replicated write, truncate and fsync reach every member
SC_OPTS="-r 3 -c $CHID"
expect '^ok size=3000000$' sc "$AH" write 20 0 0 3000000 8
"$SC" pattern 8 0 3000000 "$T/ref"
for a in "$AH" "$AM" "$AL"; do
	expect '^ok n=3000000$' sc "$a" read 20 0 0 3000000 "$T/got"
	cmp "$T/got" "$T/ref" || fail "replica at $a differs"
done
expect '^ok size=1234567$' sc "$AH" truncate 20 0 1234567
expect '^ok synced$' sc "$AH" fsync 20 0
for a in "$AH" "$AM" "$AL"; do expect '^ok size=1234567$' sc "$a" stat 20 0; done
# a client may not write to a member that is not the head
expect 'stale|chain' sc "$AM" write 20 0 0 10 1
ok "replicated write, truncate, fsync on all three; writes only at the head"

# the middle member dies during a stream of writes
: >"$T/ack"
sc "$AH" stream 30 0 3000 1048576 8 "$T/ack" >"$T/stream.out" 2>&1 &
STREAM=$!
n=0
while [ "$(wc -l <"$T/ack" 2>/dev/null || echo 0)" -lt 200 ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
kill -9 "$(eval echo \$PID_$M)"
wait "$STREAM" && fail "the stream did not fail: $(cat "$T/stream.out")"
cat "$T/stream.out"
grep -qE "target=$MID: target $MID \\($AM\\) (did not answer|failed)" "$T/stream.out" \
	|| fail "the writer's error does not name target $MID ($AM): $(cat "$T/stream.out")"
acked=$(wc -l <"$T/ack")
[ "$acked" -ge 200 ] || fail "only $acked writes acknowledged"
grep -q "successor target $MID ($AM) of chain 3/$CHID failed" "$T/$H.log" || fail "head did not report $MID"
wait_log "$T/meta.log" "target $MID reported failed by target $HEAD" 5
for a in "$AH" "$AL"; do
	out=$(sc "$a" verify 30 0 1048576 30 "$T/ack") || fail "verify on $a: $out"
	echo "$a: $out"
done
ok "middle SIGKILLed: error names target $MID; $acked acknowledged blocks intact on head and tail"

# the killed store restarts and recognises what the kill tore
start_store "$M"
grep -qE 'torn object ino 30 stripe 0' "$T/$M.log" || fail "restarted $M did not report torn object 30: $(cat "$T/$M.log")"
ok "restarted $M recognised its torn object"

# a successor that stops answering: the write fails after the forward timeout
SC_OPTS="-r 2"
wait_log "$T/$H.log" 'chain tables version' 5
CH2=$(sc "$AH" chain)
T2=$(echo "$CH2" | sed -E 's/.*members [0-9]+:[0-9],([0-9]+):[0-9].*/\1/')
S2=${NAME[$T2]}
a="ADDR_$S2"; A2=${!a}
expect '^ok size=65536$' sc "$AH" write 40 0 0 65536 2   # connects head -> successor
kill -STOP "$(eval echo \$PID_$S2)"
start_t=$(date +%s)
out=$(sc "$AH" write 40 0 0 65536 3 2>&1) || true
el=$(( $(date +%s) - start_t ))
kill -CONT "$(eval echo \$PID_$S2)"
echo "$out" | grep -qE "target=$T2: target $T2 \\($A2\\) did not answer within 10000 ms" \
	|| fail "write with a silent successor: $out"
[ $el -ge 9 ] && [ $el -le 15 ] || fail "timeout after $el s"
ok "a silent successor fails the write after ${el}s, named"
store_check_logs
ok "store chain"
