#!/usr/bin/env bash
# What an operator watches: while dd writes 2 GiB through a mount, weft stat --json (the
# cluster's rates, read from meta and every store) reports dd's write rate within 20% and
# matches its schema; weft stat --mount reads the mount's own counters; Debian's dstat
# with the weft plugin shows the writes; a real Prometheus server scrapes meta, the four
# stores and the mount, promtool accepts every endpoint, and the bytes it reports match
# what was written. The mount's cache counters move as they should: a cold pass of stats
# after drop_caches goes to meta and grants the kernel its caches, a warm loop does not
# reach the mount, a cold cat waits for the stores, a second one keeps the kernel's pages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/cluster.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export WEFT_RUN_DIR=$T/run

cluster_up --stores 4 --replicas 2 --metrics
for n in meta store0 store1 store2 store3 mount; do
	[ -s "$STATE/$n.metrics.addr" ] || fail "weft up --metrics recorded no endpoint for $n"
done

fetch() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"; }

# --- Prometheus, scraping every endpoint each second
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
{
	echo "global: {scrape_interval: 1s, scrape_timeout: 900ms}"
	echo "scrape_configs:"
	echo "  - job_name: weft"
	echo "    static_configs:"
	echo "      - targets: [$(for n in meta store0 store1 store2 store3 mount; do printf '"%s",' "$(cat "$STATE/$n.metrics.addr")"; done | sed 's/,$//')]"
} >"$T/prometheus.yml"
start prometheus prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
	--web.listen-address="127.0.0.1:$pport"
query() { # query PROMQL: prints the first result's value
	python3 - "$pport" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
u = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
r = json.load(urllib.request.urlopen(u, timeout=10))
res = r["data"]["result"]
print(res[0]["value"][1] if res else "none")
PY
}
n=100; until [ "$(query 'count(up == 1)' 2>/dev/null)" = 6 ] || [ $n -eq 0 ]; do sleep 0.3; n=$((n - 1)); done
[ $n -gt 0 ] || fail "Prometheus does not see all six endpoints up: $(query 'count(up == 1)')"
ok "Prometheus scrapes meta, 4 stores and the mount"

# --- dd with weft stat (cluster and mount) and dstat watching
"$WEFT" stat --dir "$STATE" -i 1 -c 600 --json >"$T/stat.json" 2>"$T/stat.err" &
stat_pid=$!
"$WEFT" stat --mount "$MNT" -i 1 -c 600 --json >"$T/statm.json" 2>"$T/statm.err" &
statm_pid=$!
mkdir -p "$T/home/.dstat"
cp "$SRC/contrib/dstat/dstat_weft.py" "$T/home/.dstat/"
HOME=$T/home dstat -c -d -M weft -n 1 600 >"$T/dstat.out" 2>"$T/dstat.err" &
dstat_pid=$!
sleep 2
dd if=/dev/zero of="$MNT/big" bs=1M count=2048 conv=fsync 2>"$T/dd.out" || fail "dd"
sleep 2.5 # the watchers see the end of the writes, then stop
kill -0 $stat_pid || fail "weft stat ended early: $(cat "$T/stat.err")"
kill -0 $statm_pid || fail "weft stat --mount ended early: $(cat "$T/statm.err")"
kill $stat_pid $statm_pid $dstat_pid 2>/dev/null
wait $stat_pid $statm_pid $dstat_pid 2>/dev/null || true
dd_bps=$(awk '/copied/ {print $(NF-1) * ($NF == "GB/s" ? 1e9 : $NF == "MB/s" ? 1e6 : 1e3)}' "$T/dd.out")
[ -n "$dd_bps" ] || fail "no rate in dd's output: $(cat "$T/dd.out")"

python3 - "$T/stat.json" "$dd_bps" "weft stat" <<'PY' || fail "weft stat's JSON or rate is wrong"
import json, sys
rate_keys = {"read_bytes_per_s": float, "write_bytes_per_s": float, "data_ops_per_s": float,
             "meta_ops_per_s": float, "data_latency_us": dict, "meta_latency_us": dict}
def check_rates(o, where):
    for k, t in rate_keys.items():
        assert isinstance(o.get(k), (int, float) if t is float else t), "%s: %s missing or not %s" % (where, k, t.__name__)
    for k in ("data_latency_us", "meta_latency_us"):
        assert set(o[k]) == {"p50", "p99"} and o[k]["p50"] <= o[k]["p99"], where + ": bad " + k
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) >= 5, "only %d lines" % len(lines)
for l in lines:
    assert l["schema"] == "weft.stat/1" and isinstance(l["time_ms"], int) and l["interval_s"] > 0
    check_rates(l["total"], "total")
    for s in l["sources"]:
        check_rates(s, s.get("source", "?"))
        assert isinstance(s["source"], str) and isinstance(s["up"], bool)
w = [l["total"]["write_bytes_per_s"] for l in lines]
active = [i for i, x in enumerate(w) if x > 0.1 * max(w)]
full = [w[i] for i in active[1:-1]]  # the first and last active intervals are partial
assert full, "no full interval of writes: %s" % w
mean, dd = sum(full) / len(full), float(sys.argv[2])
total = sum(l["total"]["write_bytes_per_s"] * l["interval_s"] for l in lines)
print("%s: %.0f MB/s over %d full intervals, dd %.0f MB/s; %.0f MiB counted" % (sys.argv[3], mean / 1e6, len(full), dd / 1e6, total / 2**20))
assert abs(mean - dd) <= 0.2 * dd, "rate %.0f vs dd %.0f" % (mean, dd)
assert abs(total - 2**31) <= 0.1 * 2**31, "counted %.0f bytes for 2 GiB" % total
PY
ok "weft stat --json: schema holds, write rate within 20% of dd's"

python3 - "$T/statm.json" <<'PY' || fail "weft stat --mount is wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
total = sum(l["total"]["write_bytes_per_s"] * l["interval_s"] for l in lines)
assert len(lines[0]["sources"]) == 1, "expected this one mount: %s" % lines[0]["sources"]
fields = {"attr": {"misses_per_s", "grants_per_s", "nogrants_per_s"},
          "name": {"misses_per_s", "grants_per_s", "negative_grants_per_s", "nogrants_per_s"},
          "page": {"hits_per_s", "misses_per_s"}, "open": {"kept_per_s", "dropped_per_s"}}
for l in lines:
    c = l["sources"][0]["cache"]
    assert {k: set(v) for k, v in c.items()} == fields, "cache: %s" % c
    assert all(x >= 0 for v in c.values() for x in v.values()), "cache: %s" % c
print("weft stat --mount: %.0f MiB written" % (total / 2**20))
assert abs(total - 2**31) <= 0.1 * 2**31, "counted %.0f bytes for 2 GiB" % total
PY
ok "weft stat --mount counts the mount's writes"

awk -F'|' 'NR > 2 {print $3}' "$T/dstat.out" | awk '$2 != "0" && $2 != "" {found=1} END {exit !found}' \
	|| fail "dstat -M weft shows no writes: $(cat "$T/dstat.out" "$T/dstat.err")"
ok "dstat -M weft shows the writes ($(grep -c . "$T/dstat.out") lines)"

# --- Prometheus: promtool accepts every endpoint; its bytes match what was written
for n in meta store0 store1 store2 store3 mount; do
	fetch "http://$(cat "$STATE/$n.metrics.addr")/metrics" >"$T/$n.prom" || fail "GET /metrics of $n"
	promtool check metrics <"$T/$n.prom" >"$T/$n.promtool" 2>&1 || { cat "$T/$n.promtool"; fail "promtool check metrics: $n"; }
done
python3 - "$SRC/contrib/grafana/weft.json" "$T" <<'PY' || fail "the Grafana dashboard names metrics no endpoint serves"
import json, re, sys
d = json.load(open(sys.argv[1]))
served = "".join(open("%s/%s.prom" % (sys.argv[2], n)).read() for n in ("meta", "store0", "store1", "store2", "store3", "mount"))
names = set()
for p in d["panels"]:
    for t in p["targets"]:
        names |= set(re.findall(r"\b(weft_[a-z_]+?)(?:_bucket)?\b", t["expr"]))
missing = [n for n in sorted(names) if not re.search(r"^%s(_bucket)?\{" % n, served, re.M)]
assert not missing, "missing: %s" % missing
print("dashboard: %d panels, %d metric names, all served" % (len(d["panels"]), len(names)))
PY
sleep 2.5 # two scrapes after the writes
fuse=$(query 'sum(weft_fuse_write_bytes_total{process="mount"})')
[ "$fuse" = "$((1 << 31))" ] || fail "Prometheus: the mount wrote $fuse bytes, not $((1 << 31))"
stores=$(query 'sum(weft_served_received_bytes_total{op="OBJ_WRITE"}) - sum(weft_called_sent_bytes_total{process="store",op="OBJ_WRITE"})')
python3 -c "import sys; v=float(sys.argv[1]); sys.exit(0 if 2**31 <= v <= 2**31 + (16 << 20) else 1)" "$stores" \
	|| fail "Prometheus: stores received $stores bytes from clients for 2 GiB written"
ok "promtool accepts all six endpoints; Prometheus reports the mount's 2 GiB exactly, the stores' within a frame"

# --- --json on status, df and getstripe: one object each, with its schema; exit codes
"$WEFT" status --dir "$STATE" --json >"$T/status.json" || fail "weft status --json"
"$WEFT" df --dir "$STATE" --json >"$T/df.json" || fail "weft df --json"
"$WEFT" getstripe "$MNT/big" --dir "$STATE" --json >"$T/gs.json" || fail "weft getstripe --json"
python3 - "$T" <<'PY' || fail "a --json output does not match its schema"
import json, sys
t = sys.argv[1]
st = json.load(open(t + "/status.json"))
assert st["schema"] == "weft.status/1"
assert len(st["targets"]) == 4, st["targets"]
for x in st["targets"]:
    for k in ("id", "size_bytes", "free_bytes", "read_bytes", "written_bytes", "read_ops", "write_ops", "silent_ms"):
        assert isinstance(x[k], int), k
    assert x["state"] == "up" and isinstance(x["node"], str) and ":" in x["address"]
assert sum(x["written_bytes"] for x in st["targets"]) >= 2 * 2**31, "replicas 2: 4 GiB reached the stores"
assert st["capacity"]["size_bytes"] >= st["capacity"]["free_bytes"] > 0
chains = st["chains"]["replicas"]["2"]
assert chains and all(len(c["members"]) == 2 for c in chains)
df = json.load(open(t + "/df.json"))
assert df["schema"] == "weft.df/1" and df["size_bytes"] >= df["avail_bytes"] and 0 <= df["use_percent"] <= 100
gs = json.load(open(t + "/gs.json"))
assert gs["schema"] == "weft.layout/1" and gs["replicas"] == 2 and gs["stripe_unit"] == 1 << 20
assert gs["directory"] is False and gs["first_chain"] < gs["chain_count"]
PY
rc=0; "$WEFT" status --bogus >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "a usage error exits $rc, not 2"
rc=0; "$WEFT" status --meta 127.0.0.1:1 --key "$STATE/cluster.key" >/dev/null 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "an unreachable meta exits $rc, not 1"
ok "status, df and getstripe --json match their schemas; exit codes 0, 1, 2"

# --- the mount's cache counters, read live from its /metrics
cache_counts() { # FAMILY_CACHE=VALUE lines: weft_client_cache_FAMILY_total{cache="CACHE"}
	fetch "http://$(cat "$STATE/mount.metrics.addr")/metrics" |
		sed -n 's/^weft_client_cache_\([a-z]*\)_total{.*cache="\([a-z_]*\)"} \([0-9]*\)$/\1_\2=\3/p'
}
grew() { # grew BEFORE AFTER KEY: how much KEY grew between two cache_counts
	local a b
	a=$(echo "$1" | sed -n "s/^$3=//p"); b=$(echo "$2" | sed -n "s/^$3=//p")
	[ -n "$a" ] && [ -n "$b" ] || fail "no $3 among the mount's metrics: $2"
	echo $((b - a))
}
N=20
mkdir "$MNT/c"
for i in $(seq $N); do head -c 65536 /dev/urandom >"$MNT/c/f$i"; done
head -c $((32 << 20)) /dev/urandom >"$MNT/c/seq"
names() { for i in $(seq $N); do echo "$MNT/c/f$i"; done; } # no glob: no READDIRPLUS
sync; echo 3 >/proc/sys/vm/drop_caches # the kernel forgets names, attributes and pages
c0=$(cache_counts)
names | xargs stat >/dev/null || fail "stat"
c1=$(cache_counts)
for k in 1 2 3 4 5 6 7 8 9 10; do names | xargs stat >/dev/null; done
c2=$(cache_counts)
echo "cold stats: name misses +$(grew "$c0" "$c1" misses_name), grants +$(grew "$c0" "$c1" grants_name)" \
	"(attr +$(grew "$c0" "$c1" grants_attr)); 10 warm loops: name misses +$(grew "$c1" "$c2" misses_name)," \
	"attr misses +$(grew "$c1" "$c2" misses_attr)"
[ "$(grew "$c0" "$c1" misses_name)" -ge $N ] || fail "cold stats: fewer than $N LOOKUPs counted as misses"
[ "$(grew "$c0" "$c1" grants_name)" -ge $N ] && [ "$(grew "$c0" "$c1" grants_attr)" -ge $N ] \
	|| fail "cold stats: the kernel was not granted its caches under the leases"
[ "$(grew "$c1" "$c2" misses_name)" -lt $N ] && [ "$(grew "$c1" "$c2" misses_attr)" -lt $N ] \
	|| fail "warm stats reached the mount: the kernel did not cache under the leases"
for i in $(seq $N); do cat "$MNT/c/f$i"; done >/dev/null
c3=$(cache_counts)
for i in $(seq $N); do cat "$MNT/c/f$i"; done >/dev/null
c4=$(cache_counts)
echo 3 >/proc/sys/vm/drop_caches
for i in $(seq $N); do cat "$MNT/c/f$i"; done >/dev/null
c5=$(cache_counts)
cat "$MNT/c/seq" >/dev/null
c6=$(cache_counts)
echo "cold cat: page misses +$(grew "$c2" "$c3" misses_page), opens dropped +$(grew "$c2" "$c3" misses_open);" \
	"warm cat: opens kept +$(grew "$c3" "$c4" hits_open), page misses +$(grew "$c3" "$c4" misses_page);" \
	"after drop_caches: page misses +$(grew "$c4" "$c5" misses_page), opens kept +$(grew "$c4" "$c5" hits_open);" \
	"32 MiB sequential: readahead hits +$(grew "$c5" "$c6" hits_page), misses +$(grew "$c5" "$c6" misses_page)"
[ "$(grew "$c2" "$c3" misses_page)" -ge $N ] || fail "a cold cat did not count its reads from the stores"
[ "$(grew "$c2" "$c3" misses_open)" -ge $N ] || fail "first opens did not count the kernel's pages dropped"
[ "$(grew "$c3" "$c4" hits_open)" -ge $N ] && [ "$(grew "$c3" "$c4" misses_page)" -lt $N ] \
	|| fail "a second cat of unchanged files did not keep the kernel's pages"
[ "$(grew "$c4" "$c5" misses_page)" -ge $N ] || fail "a cat after drop_caches did not count its reads from the stores"
[ "$(grew "$c5" "$c6" hits_page)" -gt 0 ] || fail "a 32 MiB sequential read was never served from readahead"
ok "cache counters: cold stats miss and grant, warm ones stay in the kernel; cold cats miss, warm ones keep the pages, readahead hits"
check_logs
