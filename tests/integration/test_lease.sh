#!/usr/bin/env bash
# Leases and recalls between two mounts of one cluster (docs/ARCHITECTURE.md,
# "Coherence"): what mount A changes, mount B sees at once, though B's kernel caches
# names, attributes and pages under leases (minutes of caching would not pass: every
# check follows A's syscall with no pause). A mount that stops answering recalls is
# evicted within lease + grace, and what it writes after is refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"

export WEFT_META_LEASE_MS=3000 # meta's lease: eviction of a silent mount within 3 + 1 s
cluster_up --stores 1 --replicas 1
B=$T/mnt2
mkdir -p "$B"
"$WEFT" mount "$(cat "$STATE/meta.addr")" "$B" --key "$STATE/cluster.key" \
	--pid-file "$T/mount2.pid" --log "$T/mount2.log"
mkdir "$MNT/d"

python3 - "$MNT/d" "$B/d" <<'PY' || fail "coherence between two mounts"
import errno, os, sys, time
A, B = sys.argv[1], sys.argv[2]
def check(cond, what):
    if not cond:
        print("FAIL:", what); sys.exit(1)

# a write on A, after close, is seen by B's already-open reader, whose kernel has the
# old pages cached (without a recall it keeps them until B closes)
with open(A + "/f", "wb") as w: w.write(b"a" * 8192)
fd = os.open(B + "/f", os.O_RDONLY)
for _ in range(3): check(os.pread(fd, 8192, 0) == b"a" * 8192, "B reads what A wrote")
for i in range(20):
    c = bytes([ord("b") + i % 20])
    with open(A + "/f", "r+b") as w: w.write(c * 8192)           # overwrite, same size
    got = os.pread(fd, 8192, 0)
    check(got == c * 8192, "round %d: B's open reader sees A's overwrite at once (got %r)" % (i, got[:4]))
with open(A + "/f", "ab") as w: w.write(b"z" * 100)              # append
check(os.fstat(fd).st_size == 8292, "B's fstat sees A's append at once")
check(os.pread(fd, 200, 8192) == b"z" * 100, "B reads A's appended bytes at once")
os.close(fd)
print("ok: writes on A after close are seen by B's open cached reader at once (21 rounds)")

# chmod, rename, unlink, create on A: B's next stat, right after A's syscall, sees them
def warm(p):
    for _ in range(50):
        try: os.stat(p)
        except FileNotFoundError: pass
def gone(p):
    try: os.stat(p); return False
    except FileNotFoundError: return True
for i in range(20):
    a, b = A + "/g%d" % i, B + "/g%d" % i
    open(a, "w").close(); os.chmod(a, 0o644)
    warm(b); warm(b + ".new")                    # positive and negative entries cached
    check(os.stat(b).st_mode & 0o777 == 0o644, "B sees the file")
    os.chmod(a, 0o600)
    check(os.stat(b).st_mode & 0o777 == 0o600, "round %d: chmod on A seen by B's next stat" % i)
    os.rename(a, a + ".new")
    check(gone(b), "round %d: rename on A: B's stat of the old name fails at once" % i)
    check(os.stat(b + ".new").st_mode & 0o777 == 0o600, "round %d: B sees the new name at once" % i)
    warm(b)
    open(a, "w").close()
    check(not gone(b), "round %d: a create on A is seen by B's next stat (negative entry dropped)" % i)
    os.unlink(a + ".new")
    check(gone(b + ".new"), "round %d: unlink on A seen by B's next stat" % i)
print("ok: chmod, rename, create and unlink on A seen by B's next stat at once (20 rounds)")
PY

# B holds a file open for writing (a lease pinned by the open) and is stopped: A's chmod
# of it waits for B's answer, gets none, and goes through once lease + grace ran out
# (3 + 1 s); B is evicted, and after SIGCONT its write through the old descriptor fails
# and lands nowhere
step() { echo "$(date +%T.%N | cut -c1-12) $*"; } # timestamps, to read a failure by
# (B squashes root to nobody: the file and directory are open to all)
printf 'original' >"$MNT/d/e"
chmod 666 "$MNT/d/e"
chmod 777 "$MNT/d"
mkfifo "$T/go" "$T/done"
exec 8<>"$T/done" # opened read-write: never blocks, so a writer that died cannot hang us
timeout 60 python3 - "$B/d/e" "$T/go" "$T/done" >"$T/writer.log" 2>&1 <<'PY' &
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
open(sys.argv[3], "w").write("opened\n")
open(sys.argv[2]).read()                       # wait until B was stopped and resumed
try:
    os.pwrite(fd, b"LATE", 0)
    os.close(fd)
    print("late write accepted")
except OSError as e:
    print("late write refused:", os.strerror(e.errno))
PY
WPID=$!
PIDS+=($WPID)
step "writer started"
read -t 60 -r _ <&8 || fail "the writer on mount B could not open its file: $(cat "$T/writer.log")"
M2PID=$(cat "$T/mount2.pid")
resume() { kill -CONT "$M2PID" 2>/dev/null || true; }
trap 'resume; cleanup' EXIT
kill -STOP "$M2PID"
step "mount B stopped"
t0=$(date +%s%N)
timeout 30 chmod 600 "$MNT/d/e" || fail "chmod against a stopped mount's lease never completed"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
step "chmod done"
[ "$ms" -ge 2000 ] || fail "chmod took $ms ms: it did not wait for the stopped mount's lease"
[ "$ms" -le 15000 ] || fail "chmod took $ms ms, more than lease + grace (4 s) allows"
ok "chmod against a stopped mount's lease completed after $ms ms (lease 3 s + grace 1 s)"
grep -q "evicted" "$STATE/logs/meta.log" || fail "meta did not log the eviction"
resume
step "mount B resumed"
echo go >"$T/go"
wait "$WPID" || true
step "writer done"
grep -q "late write refused" "$T/writer.log" || fail "the evicted mount's late write: $(cat "$T/writer.log")"
[ "$(cat "$MNT/d/e")" = original ] || fail "the evicted mount's write landed: $(cat "$MNT/d/e")"
ok "the evicted mount's later write is refused ($(cat "$T/writer.log")), the file is unchanged"
# and the mount itself goes on, in a new session
timeout 30 sh -c 'echo fresh >"$1"' sh "$B/d/after" || fail "mount B cannot create after its eviction"
[ "$(cat "$MNT/d/after")" = fresh ] || fail "mount B does not work after its eviction"
ok "mount B works again after its eviction (new session)"

umount "$B"
check_logs
