# A client cut off from one store while meta and the other stores still see it (on the
# multi-host bed): the client reports the store, meta probes it, finds it alive and
# keeps it up. Documented behaviour: the client's reads fail over to another replica at
# once; its writes to chains headed by that store wait (retrying) and complete once the
# path is back (or fail with EIO after 60 s). Checked: the target is never marked down,
# 0 read errors during the cut, writes started during the cut complete with the right
# bytes after the heal.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../bed/bed.sh"
trap 'exit 143' TERM INT HUP # so that cleanup (EXIT) takes the bed down
BED=${BED:-wp$$-}
bed_available || { echo "SKIP: network namespaces unavailable here"; exit 77; }
source "$(dirname "$0")/../bed/cluster.sh"
pre_cleanup() { bedc_down; }

bedc_up 4 --replicas 2 --stripe-count 1 --stripe-unit 256K
X=2
XT=$(bedc_target_of $X)
mkdir -p "$T/src" "$MNT/d"
for i in 0 1 2 3 4 5 6 7; do head -c $(( (i + 1) * 200000 )) /dev/urandom >"$T/src/$i"; done
for i in $(seq 0 15); do cp "$T/src/$((i % 8))" "$MNT/d/before$i"; done
sync
ok "16 files written before the cut"

bed_cut_pair "$BEDC_CLIENT" $X
CUT_AT=$SECONDS
ok "client host $BEDC_CLIENT cut off from store host $X (target $XT)"
# writes during the cut (some land on chains headed by target XT: they wait)
( for i in $(seq 0 7); do cp "$T/src/$i" "$MNT/d/during$i" || echo "during$i" >>"$T/wfail"; done
  touch "$T/wdone" ) &
WP=$!; PIDS+=($WP)
# reads during the cut: every file, no error, right bytes (drop the page cache first)
echo 3 >/proc/sys/vm/drop_caches
for i in $(seq 0 15); do
	cmp -s "$T/src/$((i % 8))" "$MNT/d/before$i" || fail "read of before$i failed or wrong during the cut"
done
ok "16 files read right during the cut (reads failed over) in $((SECONDS - CUT_AT)) s"
HOLD=$((BED_META_TIMEOUT + 8))   # longer than meta's heartbeat timeout
[ $((SECONDS - CUT_AT)) -lt $HOLD ] && sleep $((HOLD - (SECONDS - CUT_AT)))
bedc_status | awk -v a="$(bed_ip $X):7071" '$3 == a {print; if ($4 != "up") exit 1}' || fail "target $XT was taken down"
grep -q "reported failed by a client.*answers meta: kept up" "$T/meta.log" ||
	ok "(no write needed target $XT's chains during the cut)"
ok "target $XT still up $((SECONDS - CUT_AT)) s into the cut"
[ -e "$T/wdone" ] && ok "writes finished during the cut (none was headed by target $XT)"
bed_heal_pair "$BEDC_CLIENT" $X
ok "path healed"
n=600; while [ ! -e "$T/wdone" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ -e "$T/wdone" ] || fail "writes did not complete after the heal"
[ ! -s "$T/wfail" ] || fail "writes failed: $(cat "$T/wfail")"
for i in $(seq 0 7); do cmp -s "$T/src/$i" "$MNT/d/during$i" || fail "during$i wrong after the heal"; done
ok "8 files written across the cut, all right"
