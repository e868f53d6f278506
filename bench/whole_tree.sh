#!/usr/bin/env bash
# Seed 004's whole kernel tree (issue 8): tar xf, du -s cold, find | xargs cat cold and
# rm -rf, on local ext4 and then on a fresh `weft up --stores 4 --replicas 2`, in the
# same run; prints one line of seconds for each, and the mount's asynchronous create
# and unlink counters.
#
#   bash bench/whole_tree.sh [WEFT] [MOUNT_OPTS]
#
# WEFT: the weft binary (default build/weft); MOUNT_OPTS: passed to weft up as
# $WEFT_UP_MOUNT_OPTS (e.g. async_create=off). Needs root (drop_caches); run it in a
# network namespace of its own (ip netns exec), one benchmark at a time. Takes a few
# minutes and about 3 GB under $WEFT_BENCH_DIR (default /var/tmp/weft-bench-tree).
set -euo pipefail
W=${1:-$(cd "$(dirname "$0")/.." && pwd)/build/weft}
O=${2:-}
D=${WEFT_BENCH_DIR:-/var/tmp/weft-bench-tree}
TARBALL=/usr/src/linux-source-6.1.tar.xz
mkdir -p "$D"
[ -f "$D/linux.tar" ] || xz -dc "$TARBALL" >"$D/linux.tar"
cleanup() { "$W" down --dir "$D/state" >/dev/null 2>&1 || true; rm -rf "$D/local" "$D/mnt" "$D/state"; }
trap cleanup EXIT
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
secs() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'; }

cleanup
mkdir -p "$D/mnt" "$D/local"
drop
lt=$(secs sh -c "tar xf '$D/linux.tar' -C '$D/local' && sync")
drop; ld=$(secs du -s "$D/local")
drop; lc=$(secs sh -c "find '$D/local' -type f -print0 | xargs -0 cat >/dev/null")
lr=$(secs sh -c "rm -rf '$D/local/linux-source-6.1' && sync")
echo "local ext4: tar xf + sync $lt s, du -s $ld s, find | xargs cat $lc s, rm -rf + sync $lr s"

export WEFT_RUN_DIR=$D/run
WEFT_UP_MOUNT_OPTS="$O" "$W" up --dir "$D/state" --mount "$D/mnt" --stores 4 --replicas 2 >/dev/null
drop
wt=$(secs tar xf "$D/linux.tar" -C "$D/mnt"); ws=$(secs "$W" sync "$D/mnt")
drop; wd=$(secs du -s "$D/mnt")
drop; wc=$(secs sh -c "find '$D/mnt' -type f -print0 | xargs -0 cat >/dev/null")
wr=$(secs rm -rf "$D/mnt/linux-source-6.1"); wrs=$(secs "$W" sync "$D/mnt")
echo "weft${O:+ ($O)}: tar xf $wt s + weft sync $ws s, du -s $wd s, find | xargs cat $wc s, rm -rf $wr s + weft sync $wrs s"
sleep 1.2 # the mount's stats file is rewritten once a second
python3 -c 'import glob, json, sys
for f in glob.glob(sys.argv[1] + "/mounts/*.json"):
    c = json.load(open(f))["counters"]
    print(" ".join("%s %d" % (k, c.get(k, 0)) for k in
          ("async_creates", "async_creates_failed", "async_unlinks", "async_unlinks_failed",
           "async_rmdirs", "async_rmdirs_failed")))' "$WEFT_RUN_DIR"
