#!/usr/bin/env bash
# Builds the protocol decoder fuzz target with clang's libFuzzer (plus ASan and UBSan)
# and runs it for a bounded time. usage: run.sh SOURCE_ROOT BUILD_DIR [SECONDS]
set -euo pipefail
src=$1 out=$2/fuzz secs=${3:-${WEFT_FUZZ_SECONDS:-60}}
mkdir -p "$out/corpus"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -std=gnu11 -I"$src/include" -I"$src/src" \
	"$src/tests/fuzz/fuzz_decode.c" "$src/src/proto/codec.c" "$src/src/proto/frame.c" \
	"$src/src/common/buf.c" "$src/src/common/err.c" "$src/src/common/crc.c" \
	$(pkg-config --cflags --libs libisal) -o "$out/fuzz_decode"
# seed: a valid header and a few valid messages
printf 'WEFT\x04\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00' >"$out/corpus/hdr"
"$out/fuzz_decode" -max_total_time="$secs" -max_len=4096 -print_final_stats=1 \
	-artifact_prefix="$out/" "$out/corpus" 2>&1 | tail -15
