# Failures on the multi-host bed (tests/bed): replicas 2 on 4 store hosts, a writer and
# a reader checking sha256 on a client host. One store host fails (MODE: kill = SIGKILL
# the store, cut = the host goes silent, freeze = SIGSTOP every process on it) while
# they run: the application must see 0 errors and 0 wrong bytes. The store comes back
# (restarted, link back, SIGCONT), resync must finish (every chain serving), and then
# every other store is killed: each file on a chain of the returned store must read
# back right from its resynced copy alone.
# Usage: test_bed_failover.sh kill|cut|freeze
MODE=${1:-kill}
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/../bed/bed.sh"
trap 'exit 143' TERM INT HUP # so that cleanup (EXIT) takes the bed down
BED=${BED:-wf$$-}
bed_available || { echo "SKIP: network namespaces unavailable here"; exit 77; }
source "$(dirname "$0")/../bed/cluster.sh"
ALLOWED_ERRORS='successor target|did not answer|TARGET_FAILED|copying ino|cannot|failed|refus|unreachable|timed out|Connection'
pre_cleanup() { bedc_down; }

bedc_up 4 --replicas 2 --stripe-count 1 --stripe-unit 256K
X=2                      # the host that fails
XT=$(bedc_target_of $X)
[ -n "$XT" ] || { bedc_status; fail "no target on host $X"; }

mkdir -p "$T/src"
for i in 0 1 2 3 4 5 6 7; do head -c $(( (i + 1) * 300000 )) /dev/urandom >"$T/src/$i"; done
( cd "$T/src" && sha256sum * ) >"$T/src.sha"
mkdir "$MNT/d"

# writer: copies source files into d/ in turn, records name + source
writer() {
	local i=0 errs=0
	while [ ! -e "$T/stop" ]; do
		local s=$((i % 8))
		if cp "$T/src/$s" "$MNT/d/f$i" 2>>"$T/writer.err"; then echo "f$i $s" >>"$T/written"
		else errs=$((errs + 1)); echo "write f$i failed" >>"$T/writer.err"; fi
		i=$((i + 1))
	done
	echo "$errs" >"$T/writer.errs"
}
# reader: reads back files written so far, compares with their source
reader() {
	local errs=0 bad=0 n=0
	while [ ! -e "$T/stop" ]; do
		[ -s "$T/written" ] || { sleep 0.1; continue; }
		local line f s
		line=$(shuf -n1 "$T/written"); f=${line% *}; s=${line#* }
		if ! sha=$(sha256sum <"$MNT/d/$f" 2>>"$T/reader.err"); then
			errs=$((errs + 1)); echo "read $f failed" >>"$T/reader.err"
		elif [ "${sha%% *}" != "$(sha256sum <"$T/src/$s" | cut -d' ' -f1)" ]; then
			bad=$((bad + 1)); echo "wrong bytes in $f" >>"$T/reader.err"
		fi
		n=$((n + 1))
	done
	echo "$errs $bad $n" >"$T/reader.res"
}
writer & WP=$!; PIDS+=($WP)
reader & RP=$!; PIDS+=($RP)
sleep 3

case $MODE in
kill) kill -KILL "$(eval echo \$PID_store$X)"; wait "$(eval echo \$PID_store$X)" 2>/dev/null || true ;;
cut) bed_cut $X ;;
freeze) bed_freeze $X ;;
esac
ok "$MODE host $X (target $XT)"
bedc_wait_down "$XT" 30
ok "target $XT marked down"
# writes go on with one copy: wait for a few (a write stuck on the silent host first
# waits out the forward timeout), so that the returning store has something to copy
n0=$(wc -l <"$T/written"); n=450
while [ "$(wc -l <"$T/written")" -lt $((n0 + 6)) ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
[ $n -gt 0 ] || fail "writes stalled while target $XT was down"
ok "$(( $(wc -l <"$T/written") - n0 )) files written while target $XT was down"
case $MODE in
kill) bedc_store_start $X ;;
cut) bed_heal $X ;;
freeze) bed_thaw $X ;;
esac
ok "host $X back"
sleep 2
bedc_wait_serving 90
ok "resync finished: every chain serving"
touch "$T/stop"
wait $WP $RP
read -r rerrs rbad rn <"$T/reader.res"
werrs=$(cat "$T/writer.errs")
nw=$(wc -l <"$T/written")
echo "writer: $nw files, $werrs errors; reader: $rn reads, $rerrs errors, $rbad wrong"
[ "$werrs" = 0 ] && [ "$rerrs" = 0 ] && [ "$rbad" = 0 ] || { cat "$T"/writer.err "$T"/reader.err 2>/dev/null | head; fail "application saw errors"; }
[ "$nw" -gt 10 ] || fail "writer wrote only $nw files"
ok "0 application errors, 0 wrong bytes ($nw files written, $rn reads)"
copied=$(sed -n 's/.*chain 2\/[0-9]*: in sync (\([0-9]*\) objects copied).*/\1/p' "$T/store$X.log" |
	awk '{s += $1} END {print s + 0}')
[ "$copied" -gt 0 ] || fail "the returning store copied nothing (writes went on while it was away)"
ok "resync copied $copied objects to target $XT (only those written while it was away)"

# Which files live on chains that include target XT?
chains=$(bedc_status | awk -v t="$XT" '/^  2 replicas/ {r=1; next} /^  [13] replica/ {r=0}
	r && $1 == "chain" { for (i = 3; i <= NF; i++) { split($i, a, "("); sub("->", "", a[1]); if (a[1] == t) print $2 } }')
[ -n "$chains" ] || { bedc_status; fail "no 2-replica chain holds target $XT"; }
# kill every other store: only XT's copies are left
for ((i = 2; i <= BEDC_STORES + 1; i++)); do
	[ $i = $X ] && continue
	kill -KILL "$(eval echo \$PID_store$i)"; wait "$(eval echo \$PID_store$i)" 2>/dev/null || true
done
for ((i = 2; i <= BEDC_STORES + 1; i++)); do
	[ $i = $X ] && continue
	bedc_wait_down "$(bedc_status | awk -v a="$(bed_ip $i):7071" '$3 == a {print $1}')" 30
done
checked=0
while read -r f s; do
	fc=$(bed_exec 1 "$WEFT" getstripe "$MNT/d/$f" --meta "$(bed_ip 1):7070" --key "$KEY" 2>/dev/null |
		awk '/first_chain/ {print $2}') || true
	echo "$chains" | grep -qx "$fc" || continue
	sha=$(sha256sum <"$MNT/d/$f") || fail "reading $f (chain $fc) from the resynced copy failed"
	[ "${sha%% *}" = "$(sha256sum <"$T/src/$s" | cut -d' ' -f1)" ] || fail "$f: wrong bytes from the resynced copy"
	checked=$((checked + 1))
done <"$T/written"
[ $checked -gt 0 ] || fail "no file on target $XT's chains to check"
ok "$checked files read back right from the resynced target $XT alone"
# bounded by what changed: fewer objects copied than the returning target holds
[ "$copied" -lt "$checked" ] || fail "resync copied $copied objects of $checked: not bounded by what changed"
