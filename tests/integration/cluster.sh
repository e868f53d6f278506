# Helpers for tests that run a whole cluster with weft up, on top of lib.sh.
STATE=$T/state
MNT=$T/mnt

cluster_up() { # cluster_up [weft up options...]
	"$WEFT" up --dir "$STATE" --mount "$MNT" "$@" >"$T/up.out" 2>&1 || {
		cat "$T/up.out"; for f in "$STATE"/logs/*.log; do echo "--- $f"; tail -20 "$f"; done
		fail "weft up failed"
	}
}

cluster_down() {
	"$WEFT" down --dir "$STATE" >"$T/down.out" 2>&1 || { cat "$T/down.out"; fail "weft down failed"; }
}

# Runs at exit before lib.sh's cleanup: never leave a mount or daemons behind.
pre_cleanup() {
	[ "${LINKED_WEFT:-0}" = 1 ] && rm -f /usr/local/sbin/weft
	for m in "$MNT" "$T"/mnt2; do
		mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
	done
	[ -d "$STATE" ] && "$WEFT" down --dir "$STATE" >/dev/null 2>&1 || true
	# copy daemon logs where lib.sh shows them on failure
	for f in "$STATE"/logs/*.log; do [ -f "$f" ] && cp "$f" "$T/$(basename "$f")"; done
	return 0
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
