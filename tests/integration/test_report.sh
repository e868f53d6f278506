#!/usr/bin/env bash
# bench/report --quick runs the seed workloads on weft and the local file system and
# writes a markdown report with the two plots (fio against N, seed 004's phases).
. "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
WEFT=$WEFT bash "$SRC/bench/report" --quick --out "$T/out" >"$T/report.log" 2>&1 || { cat "$T/report.log"; fail "bench/report --quick"; }
for p in fio.png tar.png; do
	[ "$(head -c 8 "$T/out/$p" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || fail "$p is not a PNG"
	[ "$(stat -c %s "$T/out/$p")" -gt 10000 ] || fail "$p is too small to hold a plot"
	grep -q "($p)" "$T/out/report.md" || fail "report.md does not embed $p"
done
for row in "dd write" "dd read back" "fio write N=1" "fio read N=16" "tar xf" "du -s" "rm -rf"; do
	grep "^| $row" "$T/out/report.md" | grep -Eq '\| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|$' \
		|| fail "report.md has no numbers for '$row': $(grep "^| $row" "$T/out/report.md")"
done
ok "bench/report --quick: report.md with $(grep -c '^| [a-z]' "$T/out/report.md") rows and two plots"
