#!/usr/bin/env bash
# Crash test: 8 clients create, rename and unlink files as fast as they can, logging
# every acknowledged op; meta is SIGKILLed mid-stream and restarted, several rounds.
# After each restart every acknowledged op of every round is present, no op is half
# applied (a rename is either done or not), and the LMDB store opens cleanly.
# Then on a live mount: meta is SIGKILLed twice in the middle of a tar xf and restarted;
# tar sees no error (what was in flight is sent again, tagged, and applied once:
# meta/replies.h) and the tree equals a local extraction.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/meta_lib.sh"
. "$(dirname "$0")/cluster.sh"
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

# a tree of 1,500 small files (modes, a few symlinks and hard links), as a tarball
python3 - "$T/src" <<'PY'
import os, random, sys
random.seed(8)
root = sys.argv[1]
for d in range(40):
    p = os.path.join(root, "d%02d" % d, "sub%d" % (d % 4))
    os.makedirs(p)
    for f in range(100):
        q = os.path.join(p, "f%03d" % f)
        with open(q, "wb") as fh:
            fh.write(os.urandom(random.randrange(0, 6000)))
        os.chmod(q, random.choice([0o644, 0o600, 0o755, 0o640]))
    os.symlink("sub%d/f000" % (d % 4), os.path.join(root, "d%02d" % d, "link"))
    os.link(os.path.join(p, "f001"), os.path.join(p, "hard"))
PY
tar cf "$T/src.tar" -C "$T/src" .
mkdir "$T/local"
tar xf "$T/src.tar" -C "$T/local"
cluster_up --stores 2 --replicas 1
mkdir "$MNT/x"
tar xf "$T/src.tar" -C "$MNT/x" 2>"$T/tar.err" &
TARPID=$!
for k in 1 2; do
	sleep 0.8
	kill -0 "$TARPID" 2>/dev/null || fail "tar ended before kill $k (make the tree bigger)"
	kill -9 "$(cat "$STATE/meta.pid")"
	sleep 0.3
	cluster_up --stores 2 --replicas 1
done
wait "$TARPID" || fail "tar failed across meta's crashes: $(head -5 "$T/tar.err")"
diff -r "$T/local" "$MNT/x" >"$T/diff.out" 2>&1 || fail "tree after the crashes differs: $(head -5 "$T/diff.out")"
(cd "$T/local" && find . -printf '%m %y %p %l\n' | sort) >"$T/l.list"
(cd "$MNT/x" && find . -printf '%m %y %p %l\n' | sort) >"$T/w.list"
diff "$T/l.list" "$T/w.list" || fail "modes, types or links differ after the crashes"
ok "tar xf across two SIGKILLs of meta: the tree equals a local extraction"
