#!/usr/bin/env bash
# Files replaced by rename and scratch files (issue 8): the patterns of rsync, sed -i,
# editors and package managers (write a temporary file, close it, rename it over the
# real name) and of compilers and tools that write a scratch file and remove it. Each of
# N files: plain (create, write 4 KiB, close), move (the same into a temporary name, then
# rename to a new name: rsync into an empty tree), rename (the same, renamed over a name
# that exists from the round before: rsync updating, sed -i), scratch (create, write,
# close, unlink). On local ext4 (/var/tmp) and on a fresh `weft up --stores 4
# --replicas 2` for each build, builds alternately:
#
#   bash bench/replace_ab.sh WEFT_A [WEFT_B] [RUNS] [N]
#
# Prints files/s per pattern, and each weft row's ratio to local ext4 in the same run.
# Needs root; run it in a network namespace of its own (ip netns exec).
set -euo pipefail
A=$1 B=${2:-} RUNS=${3:-2} N=${4:-2000}
LOCAL=${WEFT_BENCH_LOCAL:-/var/tmp/weft-bench-replace}
S=
cleanup() { [ -z "$S" ] || { "$A" down --dir "$S" >/dev/null 2>&1 || true; rm -rf "$S"; }; rm -rf "$LOCAL"; }
trap cleanup EXIT
rates() { # rates DIR: "plain move rename scratch" files/s
	python3 - "$1" "$N" <<'PY'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
buf = b"x" * 4096
def put(p):
    with open(p, "wb") as f:
        f.write(buf)
def plain(d, i):
    put(os.path.join(d, "f%d" % i))
def move(d, i):
    tmp = os.path.join(d, ".f.tmp%d" % i)
    put(tmp)
    os.rename(tmp, os.path.join(d, "f%d" % i))
def rename(d, i):
    tmp = os.path.join(d, ".f.tmp%d" % i)
    put(tmp)
    os.rename(tmp, os.path.join(d, "f%d" % (i % 100)))
def scratch(d, i):
    p = os.path.join(d, "s%d" % i)
    put(p)
    os.unlink(p)
out = []
for fn in (plain, move, rename, scratch):
    sub = os.path.join(d, fn.__name__)
    os.makedirs(sub)
    t = time.monotonic()
    for i in range(n):
        fn(sub, i)
    out.append("%.0f" % (n / (time.monotonic() - t)))
print(" ".join(out))
PY
}
one() { # one NAME WEFT
	S=$(mktemp -d /tmp/weft-replace.XXXXXX)
	export WEFT_RUN_DIR=$S/run
	"$2" up --dir "$S" --stores 4 --replicas 2 >/dev/null
	rm -rf "$LOCAL"; mkdir -p "$LOCAL"
	local l w
	l=$(rates "$LOCAL")
	w=$(rates "$S/mnt")
	echo "$l $w" | awk -v n="$1" '{ printf "%-2s local %6d %6d %6d %6d  weft %6d %6d %6d %6d  weft/local %.3f %.3f %.3f %.3f\n",
		n, $1, $2, $3, $4, $5, $6, $7, $8, $5 / $1, $6 / $2, $7 / $3, $8 / $4 }'
	"$2" down --dir "$S" >/dev/null 2>&1 || true
	rm -rf "$S"; S=
}
echo "files/s: plain move rename scratch ($N files of 4 KiB each)"
for r in $(seq "$RUNS"); do one A "$A"; [ -z "$B" ] || one B "$B"; done
