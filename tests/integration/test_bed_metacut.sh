# Meta cut off from everyone (on the multi-host bed) for longer than the target timeout
# but less than the session timeout, while a writer and a reader run: no application
# error, no wrong byte, every file reads back right afterwards, and meta does not take
# every store out when it comes back (it was the one cut off).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../bed/bed.sh"
trap 'exit 143' TERM INT HUP # so that cleanup (EXIT) takes the bed down
BED=${BED:-wm$$-}
bed_available || { echo "SKIP: network namespaces unavailable here"; exit 77; }
source "$(dirname "$0")/../bed/cluster.sh"
pre_cleanup() { bedc_down; }

bedc_up 4 --replicas 2 --stripe-count 1 --stripe-unit 256K
mkdir -p "$T/src" "$MNT/d"
for i in 0 1 2 3 4 5 6 7; do head -c $(( (i + 1) * 200000 )) /dev/urandom >"$T/src/$i"; done
writer() {
	local i=0 errs=0
	while [ ! -e "$T/stop" ]; do
		if cp "$T/src/$((i % 8))" "$MNT/d/f$i" 2>>"$T/writer.err"; then echo "f$i $((i % 8))" >>"$T/written"
		else errs=$((errs + 1)); fi
		i=$((i + 1))
	done
	echo "$errs" >"$T/writer.errs"
}
reader() {
	local errs=0 n=0 line f s
	while [ ! -e "$T/stop" ]; do
		[ -s "$T/written" ] || { sleep 0.1; continue; }
		line=$(shuf -n1 "$T/written"); f=${line% *}; s=${line#* }
		cmp -s "$MNT/d/$f" "$T/src/$s" 2>>"$T/reader.err" || { errs=$((errs + 1)); echo "read $f" >>"$T/reader.err"; }
		n=$((n + 1))
	done
	echo "$errs $n" >"$T/reader.res"
}
writer & PIDS+=($!); WP=$!
reader & PIDS+=($!); RP=$!
sleep 3
bed_cut 1
ok "meta host cut off"
sleep $((BED_META_TIMEOUT * 2 + 2))
bed_heal 1
ok "meta host back after $((BED_META_TIMEOUT * 2 + 2)) s (target timeout $BED_META_TIMEOUT s, session timeout 30 s)"
sleep 5
n0=$(wc -l <"$T/written")
n=300; while [ "$(wc -l <"$T/written")" -lt $((n0 + 3)) ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ $n -gt 0 ] || fail "writes did not resume"
touch "$T/stop"
wait $WP $RP
read -r rerrs rn <"$T/reader.res"
werrs=$(cat "$T/writer.errs")
echo "writer: $(wc -l <"$T/written") files, $werrs errors; reader: $rn reads, $rerrs errors"
[ "$werrs" = 0 ] && [ "$rerrs" = 0 ] || { head "$T"/writer.err "$T"/reader.err; fail "application errors"; }
! bedc_status | grep -q ' down ' || { bedc_status; fail "meta took a store out after its own cut"; }
grep -q "meta itself was cut off" "$T/meta.log" || fail "meta did not notice it was the one cut off"
# the stores' grace runs from when meta hears again, not from a check during the cut
grep -q "heard from again after meta's cut" "$T/meta.log" || fail "meta did not note hearing the stores again"
echo 3 >/proc/sys/vm/drop_caches
while read -r f s; do cmp -s "$MNT/d/$f" "$T/src/$s" || fail "$f wrong after the cut"; done <"$T/written"
ok "0 application errors; every file right; no store taken out"
