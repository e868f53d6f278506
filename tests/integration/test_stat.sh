#!/usr/bin/env bash
# What an operator watches: while dd writes 2 GiB through a mount, weft stat --json (the
# cluster's rates, read from meta and every store) reports dd's write rate within 20% and
# matches its schema; weft stat --mount reads the mount's own counters; Debian's dstat
# with the weft plugin shows the writes; a real Prometheus server scrapes meta, the four
# stores and the mount, promtool accepts every endpoint, and the bytes it reports match
# what was written.
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
check_logs
