# A weft cluster on the multi-host bed (tests/bed/bed.sh), for tests and benchmarks.
# Source after lib.sh (T, start, fail) and bed.sh. Host 1 runs meta; hosts 2..S+1 run
# one store each (node hI); host S+2 runs the mount at $MNT. Daemons run in the
# foreground under `start`, so each has a PID here (PID_storeI) and a log in $T.
BED_META_TIMEOUT=${BED_META_TIMEOUT:-4}   # --target-timeout (s)
MNT=$T/mnt

bedc_up() { # bedc_up NSTORES [mkfs options...]
	local ns=$1 i; shift
	BEDC_STORES=$ns
	BEDC_CLIENT=$((ns + 2))
	bed_up $((ns + 2)) || fail "bed_up"
	"$WEFT" mkfs --meta "$T/meta" "$@" >"$T/mkfs.out" 2>&1 || { cat "$T/mkfs.out"; fail mkfs; }
	KEY=$T/meta/cluster.key
	start meta $(bed_in 1) "$WEFT" meta "$T/meta" --listen "$(bed_ip 1):7070" -f \
		--target-timeout "$BED_META_TIMEOUT"
	bedc_wait_port 1 7070
	for ((i = 2; i <= ns + 1; i++)); do bedc_store_start "$i"; done
	mkdir -p "$MNT"
	start mount $(bed_in "$BEDC_CLIENT") "$WEFT" mount "$(bed_ip 1):7070" "$MNT" --key "$KEY" \
		-f -o name=client,no_root_squash
	local n=100
	while ! mountpoint -q "$MNT" && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	mountpoint -q "$MNT" || fail "mount did not come up"
}

bedc_wait_port() { # host port
	local n=100
	while ! bed_exec "$1" bash -c "exec 3<>/dev/tcp/$(bed_ip "$1")/$2" 2>/dev/null; do
		n=$((n - 1)); [ $n -gt 0 ] || fail "host $1 port $2 not listening"; sleep 0.1
	done
}

bedc_store_start() { # host (BEDC_STORE_ARGS: more store options)
	local i=$1
	start "store$i" $(bed_in "$i") "$WEFT" store "$T/store$i" --meta "$(bed_ip 1):7070" \
		--listen "$(bed_ip "$i"):7071" --node "h$i" --key "$KEY" -f ${BEDC_STORE_ARGS:-}
	bedc_wait_port "$i" 7071
}

bedc_weft() { bed_exec 1 "$WEFT" "$@" --meta "$(bed_ip 1):7070" --key "$KEY"; }
bedc_status() { bedc_weft status; }

# Target id of the store on host i.
bedc_target_of() { bedc_status | awk -v a="$(bed_ip "$1"):7071" '$3 == a {print $1; exit}'; }

# Waits until every chain member is serving (timeout seconds); fails otherwise.
# (A status that fails or lacks the chain tables counts as not serving yet.)
bedc_wait_serving() {
	local n=$(( ${1:-60} * 2 )) out
	while :; do
		out=$(bedc_status 2>/dev/null) && echo "$out" | grep -q '^  2 replicas' &&
			! echo "$out" | grep -q 'syncing\|offline\|rebuilding' && return 0
		n=$((n - 1)); [ $n -gt 0 ] || { bedc_status; fail "chains not all serving"; }
		sleep 0.5
	done
}

# Waits until every chain of the R-replica table is serving (timeout seconds).
bedc_wait_table_serving() { # R timeout
	local n=$(( ${2:-60} * 2 )) out
	while :; do
		out=$(bedc_status 2>/dev/null) && echo "$out" | grep -q "^  $1 replica" &&
			echo "$out" | awk -v r="$1" '/^  [0-9] replica/ {t = $1}
				t == r && /chain / && /syncing|offline|rebuilding/ {f=1} END {exit f}' &&
			return 0
		n=$((n - 1)); [ $n -gt 0 ] || { bedc_status; fail "$1-replica chains not all serving"; }
		sleep 0.5
	done
}

# Waits until target id is marked down (offline) at meta.
bedc_wait_down() { # id timeout
	local n=$(( ${2:-30} * 5 ))
	until bedc_status | awk -v id="$1" '$1 == id && $4 == "down" {f=1} END {exit !f}'; do
		n=$((n - 1)); [ $n -gt 0 ] || { bedc_status; fail "target $1 not marked down"; }
		sleep 0.2
	done
}

bedc_down() {
	mountpoint -q "$MNT" 2>/dev/null && { umount "$MNT" 2>/dev/null || umount -l "$MNT"; }
	bed_down
}
