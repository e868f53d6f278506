#!/usr/bin/env bash
# What a site installs and runs: meson install puts the binary, man pages, systemd units
# and libweft where Debian expects them; every verb has a man page that renders; the
# units pass systemd-analyze verify; meta, store and mount speak systemd's notify
# protocol (READY=1, WATCHDOG=1 from a live event loop, STOPPING=1); libweft links from
# its installed header and library; dpkg-buildpackage builds the three packages, and
# dpkg -i of them gives a working weft on PATH.
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=$T/root

# --- meson install
meson install -C "$BUILD" --destdir "$ROOT" >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "meson install"; }
prefix=$(meson introspect "$BUILD" --buildoptions | tr '{' '\n' | grep '"name": "prefix"' | sed 's/.*"value": "\([^"]*\)".*/\1/')
[ -x "$ROOT$prefix/bin/weft" ] || fail "meson install put no weft in $prefix/bin"
ok "meson install into a staging root (prefix $prefix)"

# --- a man page for every verb, each rendering without a warning
verbs=$("$WEFT" --help | awk '/^  [a-z]/ && !/--/ {print $1}')
[ -n "$verbs" ] || fail "no verbs in weft --help"
pages=$(find "$ROOT" -path '*/man/man[18]/*' -type f)
page_of() { echo "$pages" | grep -E "/weft-$1\.[18]$" | head -1; }
for v in $verbs; do
	p=$(page_of "$v")
	[ -n "$p" ] || fail "no man page for weft $v"
done
[ -n "$(echo "$pages" | grep -E '/weft\.1$')" ] || fail "no weft(1) page"
for p in $pages; do
	out=$(MANWIDTH=80 man -l "$p" 2>&1 >/dev/null) || fail "man -l $p failed"
	[ -z "$out" ] || fail "man -l $p warns: $out"
	MANWIDTH=80 man -l "$p" 2>/dev/null | grep -q '^NAME' || fail "$p renders no NAME section"
done
ok "$(echo "$pages" | wc -l) man pages, one for each of $(echo $verbs | wc -w) verbs, render cleanly"

# --- systemd units verify (pointed at the weft under test: verify checks ExecStart exists)
units=$(find "$ROOT" -name 'weft-*.service')
[ "$(echo "$units" | wc -l)" -ge 3 ] || fail "expected meta, store and mount units, found: $units"
mkdir "$T/units"
for u in $units; do
	b=$(basename "$u")
	case $b in *@.service) b=${b/@./@t1.}; esac
	sed "s#$prefix/bin/weft#$WEFT#g" "$u" >"$T/units/$b"
	grep -q '^Type=notify' "$T/units/$b" || fail "$b is not Type=notify"
done
(cd "$T/units" && systemd-analyze verify --man=no ./*.service) >"$T/verify.log" 2>&1 || { cat "$T/verify.log"; fail "systemd-analyze verify"; }
ok "systemd-analyze verify passes on $(ls "$T/units" | wc -l) units"

# --- sd_notify: READY=1 once serving, WATCHDOG=1 while the loop runs, STOPPING=1 at exit
listen() { # listen NAME: a NOTIFY_SOCKET listener writing $T/NAME.notify
	start "notify_$1" "$BUILD/tests/integration/notify_listen" "$T/$1.sock" 30
	local n=100; while [ ! -S "$T/$1.sock" ] && [ $n -gt 0 ]; do sleep 0.05; n=$((n - 1)); done
	[ -S "$T/$1.sock" ] || fail "notify listener $1 did not start"
}
wait_line() { # wait_line FILE TEXT SECONDS
	local n=$(( $3 * 10 ))
	while ! grep -qx "$2" "$1" 2>/dev/null && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
	grep -qx "$2" "$1" || fail "no $2 in $1: $(tr '\n' ' ' <"$1" 2>/dev/null)"
}
"$WEFT" mkfs --meta "$T/meta" >/dev/null || fail "mkfs"
listen meta
NOTIFY_SOCKET=$T/meta.sock WATCHDOG_USEC=1000000 \
	start meta "$WEFT" meta "$T/meta" --listen 127.0.0.1:0 -f --log "$T/meta.log"
wait_line "$T/notify_meta.log" READY=1 10
wait_line "$T/notify_meta.log" WATCHDOG=1 5
addr=$(grep -o 'serving .* on [^ ]*' "$T/meta.log" | awk '{print $NF}')
[ -n "$addr" ] || fail "meta logged no address"
listen store
NOTIFY_SOCKET=$T/store.sock WATCHDOG_USEC=1000000 \
	start store "$WEFT" store "$T/s0" --meta "$addr" --listen 127.0.0.1:0 --node n0 \
	--key "$T/meta/cluster.key" -f --log "$T/store.log"
wait_line "$T/notify_store.log" READY=1 10
wait_line "$T/notify_store.log" WATCHDOG=1 5
mkdir "$T/mnt"
listen mount
NOTIFY_SOCKET=$T/mount.sock start mount "$WEFT" mount "$addr" "$T/mnt" -f --key "$T/meta/cluster.key" -o no_root_squash
wait_line "$T/notify_mount.log" READY=1 10
mountpoint -q "$T/mnt" || fail "READY=1 before the mount was live"
echo hello >"$T/mnt/f" && [ "$(cat "$T/mnt/f")" = hello ] || fail "I/O through the notified mount"
umount "$T/mnt"
kill "$PID_store" "$PID_meta"; wait "$PID_store" "$PID_meta" 2>/dev/null || true
wait_line "$T/notify_meta.log" STOPPING=1 5
wait_line "$T/notify_store.log" STOPPING=1 5
ok "meta, store and mount: READY=1 when serving, WATCHDOG=1 from the loop, STOPPING=1"

# --- libweft from its installed header and library (weft-dev)
cat >"$T/app.c" <<'C'
#include <stdio.h>
#include <weft/client.h>
int main(void)
{
	struct weft_client_opts o = {.meta_addr = "127.0.0.1:1", .key_file = "/nonexistent"};
	struct weft_client *c;
	char err[256];
	int rc = weft_client_open(&o, &c, err, sizeof(err));
	printf("%d %s\n", rc, err);
	return rc < 0 ? 0 : 1;
}
C
inc=$(find "$ROOT" -type d -path '*/include' | head -1)
lib=$(find "$ROOT" -name libweft.a | head -1)
[ -n "$inc" ] && [ -n "$lib" ] || fail "no installed header or libweft.a"
cc -o "$T/app" "$T/app.c" -I"$inc" "$lib" -lfuse3 -lisal -lsodium -lcrypto -ljansson -lmicrohttpd -lm -lpthread 2>"$T/cc.log" || { cat "$T/cc.log"; fail "an application does not build against the installed libweft"; }
"$T/app" >"$T/app.out" || fail "libweft opened a client with no key: $(cat "$T/app.out")"
grep -qi 'key' "$T/app.out" || fail "libweft's error does not name the key: $(cat "$T/app.out")"
ok "an application links the installed libweft and gets a clear error"

# --- Debian packages
mkdir -p "$T/pkg/src"
(cd "$SRC" && git ls-files -co --exclude-standard | grep -v '^build' | tar -cf - -T -) | tar -xf - -C "$T/pkg/src"
(cd "$T/pkg/src" && dpkg-buildpackage -b -us -uc) >"$T/dpkg.log" 2>&1 || { tail -30 "$T/dpkg.log"; fail "dpkg-buildpackage"; }
for p in weft-client weft-server weft-dev; do
	ls "$T"/pkg/${p}_*.deb >/dev/null 2>&1 || fail "no $p package built"
done
if dpkg-query -W -f='${Status}' weft-client 2>/dev/null | grep -q 'ok installed'; then
	fail "weft-client is already installed on this machine; not touching it"
fi
dpkg -i "$T"/pkg/weft-client_*.deb "$T"/pkg/weft-server_*.deb "$T"/pkg/weft-dev_*.deb >"$T/dpkgi.log" 2>&1 \
	|| { cat "$T/dpkgi.log"; dpkg -r weft-dev weft-server weft-client >/dev/null 2>&1; fail "dpkg -i"; }
v=$(PATH=/usr/bin:/bin weft --version); rc=$?
man -w weft-store >/dev/null 2>&1; mrc=$?
dpkg -r weft-dev weft-server weft-client >/dev/null 2>&1 || fail "dpkg -r"
[ $rc -eq 0 ] && echo "$v" | grep -q '^weft ' || fail "packaged weft does not run: $v"
[ $mrc -eq 0 ] || fail "man weft-store not found after dpkg -i"
ok "dpkg-buildpackage builds weft-client, weft-server, weft-dev; installed: $v"
