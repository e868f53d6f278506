#!/usr/bin/env bash
# weft store at the protocol level against a real meta and a real store: every object
# operation (holes, short reads, truncate up and down, unaligned partial-chunk writes),
# checksums refused on receipt, a corrupted chunk on disk, restart persistence, and
# fencing when meta stops answering heartbeats.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store_lib.sh"
ALLOWED_ERRORS='does not match|checksum|mismatch|chunk'
META_ARGS="--target-timeout 3"
start_meta
start_store s1
S=$ADDR_s1
R="$T/ref" ; G="$T/got"

check_read() { # INO OFF LEN WANT_N: reads and compares with $R[OFF, OFF+WANT_N)
	expect "^ok n=$4\$" sc "$S" read "$1" 0 "$2" "$3" "$G"
	cmp -n "$4" "$G" <(dd if="$R" bs=1 skip="$2" count="$4" 2>/dev/null; head -c "$4" /dev/zero) \
		|| fail "read of ino $1 at $2 differs from the reference"
}
ref_write() { "$SC" pattern "$1" "$2" "$3" "$R"; }

# plain write and read back, read longer than the object: short
expect '^ok size=100000$' sc "$S" write 10 0 0 100000 7
ref_write 7 0 100000
check_read 10 0 200000 100000
# unaligned partial-chunk writes: inside a chunk, across a chunk boundary
expect '^ok size=100000$' sc "$S" write 10 0 70000 3000 9;   ref_write 9 70000 3000
expect '^ok size=100000$' sc "$S" write 10 0 65530 20 11;    ref_write 11 65530 20
expect '^ok size=100000$' sc "$S" write 10 0 1 65534 13;     ref_write 13 1 65534
check_read 10 0 100000 100000
check_read 10 65000 2000 2000
ok "writes and reads, unaligned partial chunks"
# a hole: write far past the end
expect '^ok size=1000010$' sc "$S" write 10 0 1000000 10 3;  ref_write 3 1000000 10
check_read 10 0 1100000 1000010
check_read 10 500000 1000 1000
expect '^ok n=20$' sc "$S" read 10 0 999990 100 "$G"
expect '^ok n=0$' sc "$S" read 10 0 2000000 10 "$G"
# an object never written reads as nothing (or ENOENT)
expect '^ok n=0$|No such file' sc "$S" read 999 0 0 4096 "$G"
# offsets past what one local file holds (ext4: 16 TiB): 1 byte at 2^60, the last byte
expect '^ok size=1152921504606846977$' sc "$S" write 14 0 1152921504606846976 1 6
expect '^ok n=1$' sc "$S" read 14 0 1152921504606846976 100 "$G"
expect '^ok n=100$' sc "$S" read 14 0 1152921504606846000 100 "$G"
expect '^ok size=9223372036854775807$' sc "$S" write 15 0 9223372036854775806 1 6
expect 'too large' sc "$S" write 15 0 9223372036854775806 2 6
[ "$(du -sk "$T/s1/objects" | cut -f1)" -lt 10000 ] || fail "sparse objects use space"
ok "holes, short reads, reads past the end, offsets up to 2^63-1"
# truncate down then up
expect '^ok size=50000$' sc "$S" truncate 10 0 50000; truncate -s 50000 "$R"
check_read 10 0 100000 50000
expect '^ok size=300000$' sc "$S" truncate 10 0 300000; truncate -s 300000 "$R"
check_read 10 0 400000 300000
expect '^ok size=300001$' sc "$S" write 10 0 300000 1 5; ref_write 5 300000 1
check_read 10 0 400000 300001
expect '^ok size=300001$' sc "$S" stat 10 0
expect '^ok synced$' sc "$S" fsync 10 0
expect '^10 0 300001$' sc "$S" list
expect 'No such file' sc "$S" stat 10 1
ok "truncate down and up, stat, fsync, list"
# a CRC that does not match: refused, nothing written (new object and existing one)
expect 'checksum.*target=[0-9]+: target [0-9]+: piece 2 of the write' sc "$S" write 11 0 0 200000 1 badcrc
expect 'No such file' sc "$S" stat 11 0
expect 'checksum' sc "$S" write 10 0 0 100 1 badcrc
check_read 10 0 400000 300001
# a writer with checksums off: the store computes them
expect '^ok size=5000$' sc "$S" write 12 0 0 5000 21 nocrc
expect '^ok n=5000$' sc "$S" read 12 0 0 5000 "$G"
ok "bad CRC refused with nothing written"
# corruption on disk: flip a byte in chunk 1 of an object
expect '^ok size=262144$' sc "$S" write 13 0 0 262144 4 sync
OBJ="$T/s1/objects/00/00/000000000000000d.0" # format 2: objects/<ino bits 16-23>/<bits 8-15>/
[ -f "$OBJ" ] || fail "object file $OBJ missing"
b=$(dd if="$OBJ" bs=1 skip=$((65536 + 777)) count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
printf "$(printf '\\%03o' $(( (b ^ 255) & 255 )))" | dd of="$OBJ" bs=1 seek=$((65536 + 777)) conv=notrunc 2>/dev/null
expect 'checksum' sc "$S" read 13 0 65536 65536 "$G"
expect 'checksum' sc "$S" read 13 0 0 262144 "$G"
expect 'checksum' sc "$S" read 13 0 66000 10 "$G"
rm -f "$R"; ref_write 4 0 262144
check_read 13 0 65536 65536
check_read 13 131072 131072 131072
ok "a corrupted chunk fails its reads with a checksum error; other chunks read"
# counters
expect 'bytes_written=[1-9]' sc "$S" stats
# restart: everything persists
kill "$PID_s1"; wait "$PID_s1" || true
start_store s1
rm -f "$R"; ref_write 7 0 100000; ref_write 9 70000 3000; ref_write 11 65530 20; ref_write 13 1 65534
truncate -s 50000 "$R"; truncate -s 300000 "$R"; ref_write 5 300000 1
check_read 10 0 400000 300001
expect '^ok size=300001$' sc "$S" stat 10 0
expect 'checksum' sc "$S" read 13 0 65536 65536 "$G"
expect '^ok deleted$' sc "$S" delete 10
expect 'No such file' sc "$S" stat 10 0
ok "restart keeps every object; delete"
# fencing: meta stops answering; once the lease (3 s) runs out data requests are refused
CH=$(sc "$S" chain)
CHID=$(echo "$CH" | sed -E 's|chain 1/([0-9]+) ver ([0-9]+).*|\1|')
CHVER=$(echo "$CH" | sed -E 's|chain 1/([0-9]+) ver ([0-9]+).*|\2|')
kill -STOP "$PID_meta"
expect '^ok n=5000$' "$SC" -c "$CHID" -V "$CHVER" "$KEY" "$META" "$S" read 12 0 0 5000 "$G"
sleep 4
expect 'not serving' "$SC" -c "$CHID" -V "$CHVER" "$KEY" "$META" "$S" read 12 0 0 5000 "$G"
expect 'not serving' "$SC" -c "$CHID" -V "$CHVER" "$KEY" "$META" "$S" write 12 0 0 10 1
wait_log "$T/s1.log" 'refusing data requests \(fenced\)'
kill -CONT "$PID_meta"
wait_log "$T/s1.log" 'serving data requests again' 15
expect '^ok size=' sc "$S" write 12 0 0 10 1
ok "fenced without a lease, serving again once meta answers"
store_check_logs
ok "store protocol"
