#!/usr/bin/env bash
# Checks that #include "..." lines in src/ and include/ go one way only:
#   common (the base) -> proto -> net -> {meta, store, client} -> mount -> cli
# A file may include its own directory, any lower layer, and include/weft/ (the public
# API). meta, store and client are siblings: none includes another (client/ and store/
# never include meta/). include/weft/ includes only itself.
# usage: check_layers.sh [SOURCE_ROOT]   (exit 1 and one line per wrong include)
set -euo pipefail
root=${1:-$(dirname "$0")/..}
cd "$root"

grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src include --include='*.c' --include='*.h' |
awk '
BEGIN {
	r["weft"] = 0; r["common"] = 1; r["proto"] = 2; r["net"] = 3
	r["meta"] = 4; r["store"] = 4; r["client"] = 4; r["mount"] = 5; r["cli"] = 6
	order = "common -> proto -> net -> {meta, store, client} -> mount -> cli"
}
{
	file = $0; sub(/:.*/, "", file)
	target = $0; sub(/^[^"]*"/, "", target); sub(/".*/, "", target)
	if (file ~ /^include\/weft\//) from = "weft"
	else { split(file, p, "/"); from = p[2] }
	if (index(target, "/") == 0) next        # same directory, no path
	split(target, q, "/"); to = q[1]
	if (!(from in r)) { print file ": directory src/" from " has no layer (add it to tests/check_layers.sh)"; bad = 1; next }
	if (!(to in r)) { print file ": includes \"" target "\", outside every layer"; bad = 1; next }
	if (from != to && r[to] >= r[from]) {
		print file ": includes \"" target "\": " from " may include only lower layers (" order ")"
		bad = 1
	}
}
END { exit bad }
' || { echo "check_layers: includes against the layering (docs/ARCHITECTURE.md, Layout of the tree)" >&2; exit 1; }
echo "check_layers: ok"
