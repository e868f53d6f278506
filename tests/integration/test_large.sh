#!/usr/bin/env bash
# Large data through the mount: a 4 GiB file written with dd and read back with a
# matching sha256, and the Linux kernel source tree extracted with tar onto the mount
# and compared with diff -r against the same extraction on local disk.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
TARBALL=/usr/src/linux-source-6.1.tar.xz
SIZE_MB=${WEFT_LARGE_MB:-4096}

cluster_up --stores 4 --replicas 2

# dd: the same bytes in, the same hash out (a pattern, so a misplaced block shows)
head -c $((1 << 20)) /dev/urandom >"$T/mib"
want=$(for i in $(seq "$SIZE_MB"); do cat "$T/mib"; done | tee >(dd of="$MNT/big" bs=1M iflag=fullblock conv=fsync status=none) | sha256sum | cut -d' ' -f1)
sleep 1
[ "$(stat -c %s "$MNT/big")" = $((SIZE_MB << 20)) ] || fail "size of the ${SIZE_MB} MiB file: $(stat -c %s "$MNT/big")"
echo 3 >/proc/sys/vm/drop_caches
got=$(dd if="$MNT/big" bs=1M status=none | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "sha256 of the ${SIZE_MB} MiB file differs"
rm "$MNT/big"
ok "${SIZE_MB} MiB written with dd, read back with the same sha256"

if [ -f "$TARBALL" ]; then
	mkdir "$T/local-tree" "$MNT/tree"
	tar xJf "$TARBALL" -C "$T/local-tree"
	t0=$(date +%s)
	tar xJf "$TARBALL" -C "$MNT/tree"
	t1=$(date +%s)
	echo 3 >/proc/sys/vm/drop_caches
	diff -r --no-dereference "$T/local-tree" "$MNT/tree" >"$T/diff.out" 2>&1 || {
		head -20 "$T/diff.out"; fail "kernel tree on weft differs from the local extraction"; }
	n=$(find "$MNT/tree" | wc -l)
	ok "kernel tree: $n entries extracted in $((t1 - t0)) s, identical to the local extraction"
else
	echo "SKIP: $TARBALL not installed (Debian package linux-source-6.1)"
fi
