#!/usr/bin/env bash
# Sparse files as on a local file system: the same scattered writes on a striped weft
# directory and on a local ext4/tmpfs file give the same SEEK_DATA/SEEK_HOLE offsets, a
# `du` and `stat %b` within 10% of the local one (one copy's worth on replicas 2),
# `cp --sparse=always` makes a sparse copy and `tar -S` archives only the data, reads
# give the written bytes and zeros, and a flipped data byte is still found.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
# flipped bytes make stores and the mount log checksum errors: expected here
ALLOWED_ERRORS='checksum|chunk|EIO|Input/output'

LOCAL=$T/local
mkdir -p "$LOCAL"
fstype=$(stat -f -c %T "$LOCAL")
case $fstype in
ext2/ext3|tmpfs|xfs|btrfs) ;;
*) LOCAL=/dev/shm/weft-sparse.$$; mkdir -p "$LOCAL"; fstype=$(stat -f -c %T "$LOCAL") ;;
esac

cluster_up --stores 4
mountpoint -q "$MNT" || fail "not mounted"
K=(--key "$STATE/cluster.key")

# python3: writes the pattern, lists extents with SEEK_DATA/SEEK_HOLE, prints st_blocks
py() { python3 - "$@" <<'EOF'
import os, sys
cmd, path = sys.argv[1], sys.argv[2]
if cmd == "write":
	# scattered writes: across 64 KiB stripe units of 4 stripes, one spanning several
	# units, a single byte, and a hole at the end
	fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
	for off, n, seed in [(0, 4096, 1), (100 << 10, 8192, 2), ((3 << 20) + 12288, 200 << 10, 3),
			     ((9 << 20) + 4096, 4096, 4), (20 << 20, 1, 5), ((33 << 20) + 65536, 131072, 6)]:
		os.pwrite(fd, bytes((seed * 7 + i * 13 + 1) % 251 + 1 for i in range(n)), off)
	os.ftruncate(fd, 40 << 20)
	os.close(fd)
elif cmd == "append":
	# a later writer: one more extent, in a stripe, with the other stripes' data
	# written by an earlier open (their blocks are asked of the stores at close)
	fd = os.open(path, os.O_WRONLY)
	os.pwrite(fd, b"z" * 8192, 12 << 20)
	os.close(fd)
elif cmd == "extents":
	fd = os.open(path, os.O_RDONLY)
	size, off, out = os.fstat(fd).st_size, 0, []
	while off < size:
		try:
			d = os.lseek(fd, off, os.SEEK_DATA)
		except OSError:
			break
		h = os.lseek(fd, d, os.SEEK_HOLE)
		out.append("data %d-%d" % (d, h))
		off = h
	# probes from offsets inside holes and inside data
	for o in [0, 1, 4095, 4096, 70000, 102400 + 100, (3 << 20), (20 << 20) + 1, (40 << 20) - 1]:
		r = []
		for w in (os.SEEK_DATA, os.SEEK_HOLE):
			try:
				r.append(str(os.lseek(fd, o, w)))
			except OSError as e:
				r.append(os.strerror(e.errno))
		out.append("at %d: data %s hole %s" % (o, r[0], r[1]))
	print("\n".join(out))
elif cmd == "blocks":
	print(os.stat(path).st_blocks)
EOF
}

# within 10% (and 16 blocks, for tiny figures) of the local value
near() { # near WEFT LOCAL WHAT
	local w=$1 l=$2 d
	d=$(( w > l ? w - l : l - w ))
	[ $((d * 10)) -le "$l" ] || [ "$d" -le 16 ] || fail "$3: weft $w, local $l (more than 10% apart)"
}

for r in 1 2; do
	D=$MNT/striped$r
	mkdir "$D"
	"$WEFT" setstripe "$D" --stripe-count 4 --stripe-unit 64K --replicas $r "${K[@]}" >/dev/null \
		|| fail "setstripe replicas $r"
	py write "$LOCAL/f$r"
	py write "$D/f"
	cmp "$LOCAL/f$r" "$D/f" || fail "replicas $r: the sparse file reads back different bytes"
	sync
	py extents "$LOCAL/f$r" >"$T/ext.local"
	py extents "$D/f" >"$T/ext.weft"
	diff -u "$T/ext.local" "$T/ext.weft" || fail "replicas $r: SEEK_DATA/SEEK_HOLE differ from $fstype"
	lb=$(py blocks "$LOCAL/f$r") wb=$(stat -c %b "$D/f")
	[ "$lb" -lt 2048 ] || fail "setup: the local file is not sparse ($lb blocks)"
	near "$wb" "$lb" "replicas $r: stat %b"
	lu=$(du -k "$LOCAL/f$r" | cut -f1) wu=$(du -k "$D/f" | cut -f1)
	near "$wu" "$lu" "replicas $r: du"
	# the apparent size is the length; only a dense file has du = du --apparent-size
	[ "$(du -k --apparent-size "$D/f" | cut -f1)" = 40960 ] || fail "replicas $r: apparent size"
	ok "replicas $r: $(grep -c ^data "$T/ext.weft") extents as on $fstype; stat %b $wb vs $lb, du $wu vs $lu KiB"

	# a fresh mount (nothing cached) sees the blocks meta keeps
	mkdir -p "$T/mnt2"
	"$WEFT" mount "$(cat "$STATE/meta.addr")" "$T/mnt2" "${K[@]}" --log "$T/mount2.log"
	wb2=$(stat -c %b "$T/mnt2/striped$r/f")
	wu2=$(du -sk "$T/mnt2/striped$r" | cut -f1)
	umount "$T/mnt2"
	near "$wb2" "$lb" "replicas $r, second mount: stat %b"
	near "$wu2" "$lu" "replicas $r, second mount: du of the directory"

	# cp --sparse=always, into weft and out of it: sparse copies of the same bytes
	cp --sparse=always "$D/f" "$D/copy"
	cp --sparse=always "$D/f" "$LOCAL/copy$r"
	cmp "$D/copy" "$LOCAL/f$r" || fail "replicas $r: cp --sparse=always on weft changed the bytes"
	cmp "$LOCAL/copy$r" "$LOCAL/f$r" || fail "replicas $r: cp out of weft changed the bytes"
	cb=$(stat -c %b "$D/copy") lcb=$(stat -c %b "$LOCAL/copy$r")
	[ "$cb" -lt 2048 ] || fail "replicas $r: cp --sparse=always on weft made $cb blocks (not sparse)"
	[ "$lcb" -lt 2048 ] || fail "replicas $r: cp --sparse=always out of weft made $lcb blocks"
	py extents "$D/copy" >"$T/ext.copy"
	diff -u "$T/ext.local" "$T/ext.copy" || fail "replicas $r: the copy's extents differ"
	ok "replicas $r: cp --sparse=always gives sparse copies ($cb blocks on weft, $lcb local)"
	# tar -S finds the holes (SEEK_HOLE) and stores only the data
	tar -C "$D" -S -cf "$T/f$r.tar" f
	ts=$(stat -c %s "$T/f$r.tar")
	[ "$ts" -lt $((2 << 20)) ] || fail "replicas $r: tar -S archived $ts bytes of a file with 344 KiB of data"
	mkdir -p "$T/untar$r" && tar -C "$T/untar$r" -xf "$T/f$r.tar"
	cmp "$T/untar$r/f" "$LOCAL/f$r" || fail "replicas $r: tar -S round trip changed the bytes"

	py append "$LOCAL/f$r"
	py append "$D/f"
	lb=$(py blocks "$LOCAL/f$r") wb=$(stat -c %b "$D/f")
	near "$wb" "$lb" "replicas $r, after a second writer: stat %b"
	py extents "$LOCAL/f$r" >"$T/ext.local"
	py extents "$D/f" >"$T/ext.weft"
	diff -u "$T/ext.local" "$T/ext.weft" || fail "replicas $r, after a second writer: extents differ"
	cmp "$LOCAL/f$r" "$D/f" || fail "replicas $r: bytes differ after a second writer"
	ok "replicas $r: a second writer: stat %b $wb vs $lb, same extents"
done

# read cold on the default layout (1 MiB stripe units, so a read of a block is one
# readahead block): data then a hole inside one block, a block all hole, zeros past the
# last object's end; the mount answers from the fetched data and a region of zeros
python3 - "$LOCAL/g" "$MNT/g" <<'EOF'
import os, sys
for path in sys.argv[1:]:
	fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
	for off, n in [(0, 4096), ((2 << 20) + 500, 3000), ((5 << 20) - 100, 200), (6 << 20, 10)]:
		os.pwrite(fd, bytes((off + i * 31) % 251 + 1 for i in range(n)), off)
	os.ftruncate(fd, (6 << 20) + 100000)
	os.close(fd)
EOF
"$WEFT" sync "$MNT" >/dev/null
sync; echo 3 >/proc/sys/vm/drop_caches
cmp "$LOCAL/g" "$MNT/g" || fail "a sparse file read cold: bytes differ from $fstype"
dd if="$MNT/g" bs=1M iflag=direct status=none | cmp - "$LOCAL/g" ||
	fail "a sparse file read with O_DIRECT: bytes differ from $fstype"
ok "a sparse file read cold and with O_DIRECT: holes and the tail past the data read as zeros"

# a byte flipped in the data of a sparse file (in its object on a store): a hole is
# not checked, but data still is, end to end: replicas 2 reads the right bytes from the
# other copy, replicas 1 gives EIO
objs() { # the object files of $1 holding data, one line per copy
	find "$STATE"/store*/objects -name "$(printf %016x "$(stat -c %i "$1")").*" ! -name '*.crc' \
		-size +0 | sort
}
flip_first_data() { # flips the first data byte of object file $1
	python3 - "$1" <<'EOF2'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
	d = os.lseek(fd, 0, os.SEEK_DATA)
except OSError:
	sys.exit(1)
b = os.pread(fd, 1, d)
os.pwrite(fd, bytes([b[0] ^ 0x5a]), d)
os.close(fd)
EOF2
}
f2=$MNT/striped2/f
first=$(objs "$f2" | awk -F/ '!seen[$NF]++')
[ -n "$first" ] || fail "no object files found for $f2"
for o in $first; do flip_first_data "$o" || fail "no data in $o"; done
sync; echo 3 >/proc/sys/vm/drop_caches
cmp "$f2" "$LOCAL/f2" || fail "replicas 2: a flipped byte in one copy changed what a sparse file reads"
f1=$MNT/striped1/f
for o in $(objs "$f1"); do flip_first_data "$o"; done
sync; echo 3 >/proc/sys/vm/drop_caches
cat "$f1" >/dev/null 2>"$T/flip.err" && fail "replicas 1: a sparse file with flipped bytes was read without error"
grep -q 'Input/output error' "$T/flip.err" || fail "replicas 1: expected EIO, got: $(cat "$T/flip.err")"
grep -q 'fails its checksum' "$STATE"/logs/store*.log || fail "no store reported the flipped chunks"
for o in $(objs "$f1"); do flip_first_data "$o"; done # flipped back
ok "flipped bytes in a sparse file: replicas 2 reads the right bytes, replicas 1 EIO"

# a dense file: du agrees with du --apparent-size
head -c $((3 << 20)) /dev/urandom >"$MNT/striped1/dense"
sync
dk=$(du -k "$MNT/striped1/dense" | cut -f1)
[ "$dk" -ge 3072 ] && [ "$dk" -le 3200 ] || fail "dense 3 MiB file: du says $dk KiB"
py extents "$MNT/striped1/dense" >"$T/ext.dense"
[ "$(head -1 "$T/ext.dense")" = "data 0-$((3 << 20))" ] || fail "dense file: $(head -1 "$T/ext.dense")"
# shortening a file frees its blocks as locally
truncate -s 8192 "$MNT/striped1/f"
tb=$(stat -c %b "$MNT/striped1/f")
[ "$tb" -le 16 ] || fail "truncated to 8 KiB: $tb blocks"
ok "dense file: du $dk KiB, one data extent; truncate frees blocks ($tb)"

[ "$LOCAL" = "$T/local" ] || rm -rf "$LOCAL"
cluster_down
check_logs
ok "sparse files"
