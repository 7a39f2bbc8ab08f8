# Numbers that two outputs both show must agree, on every shared trace: the
# reasons for GPU work without a launching call (ingest's meta, the table, the
# summary), a source's span (ingest, the summary), the activities of each device (--list devices, the summary), the
# cross-thread ranges (summary, run.db), op and range calls with merged
# redispatches counted once (nvtx, nvtx-gpu, summary, run.db), and Self CUDA %
# under filters that keep a launcher but drop what it launched.
need_traces || return 0
for f in "$TRACES"/nvprof/* "$TRACES"/nsys/* "$TRACES"/kineto/*.json*; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    "$BIN/trace-ingest" -o c.db "$f" 2>ingest.err || continue
    [ "$(q c.db 'SELECT count(*) FROM events')" -gt 0 ] || continue
    "$BIN/trace-analyze" --format json -n -1 c.db >table.json 2>/dev/null || { fail "$b: table"; continue; }
    "$BIN/trace-analyze" --report summary,nvtx,nvtx-gpu --format json -n -1 c.db >reports.json 2>/dev/null \
        || { fail "$b: reports"; continue; }
    "$BIN/trace-analyze" --list devices --format json c.db >devices.json 2>/dev/null || { fail "$b: --list"; continue; }
    for opt in "--exclude cuda" "--exclude ^void" "--time-range :20ms" "--time-range 10ms:30ms"; do
        # shellcheck disable=SC2086
        "$BIN/trace-analyze" $opt --format csv -n -1 c.db 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
for side in ("host", "device"):
    pct = sum(float(r.get("self_gpu_pct") or 0) for r in rows if (r["device"] == "cpu") == (side == "host"))
    if pct > 100 + 1e-9:
        sys.exit("%s rows sum to %.6f%% Self CUDA" % (side, pct))
' 2>pct.err || fail "$b $opt: $(cat pct.err)"
    done
    python3 - c.db table.json reports.json devices.json "$b" <<'PY' || fail "$b: $(cat why.txt)"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
table, reports, devices = (json.load(open(p)) for p in sys.argv[2:5])
why = []
by_name = {r["report"]: r for r in reports["reports"]}
def rows(report, title):
    for t in by_name[report]["tables"]:
        if t["title"] == title:
            return t["rows"]
    return []
# the reasons, three ways
meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'gpu_unlaunched_%'"))
nl = table["no_launching_call"]
for key, mkey in (("no_correlation", "gpu_unlaunched_no_correlation"),
                  ("before_capture", "gpu_unlaunched_before_capture"),
                  ("correlation_not_found", "gpu_unlaunched_not_found")):
    if int(meta.get(mkey, 0)) != nl[key]:
        why.append("%s: ingest %s, table %s" % (key, meta.get(mkey, 0), nl[key]))
run = {r["item"]: r for r in rows("summary", "Run")}
# the span of the one source, as ingest and the summary say it
said = [l.rsplit("span ", 1)[1].strip() for l in open("ingest.err") if l.startswith("  source ") and "span " in l]
if "span" in run and said != [run["span"]["value"]]:
    why.append("span: ingest %s, summary %s" % (said, run["span"]["value"]))
un = run.get("unattributed GPU activities")
if (un["number"] if un else 0) != nl["activities"]:
    why.append("unattributed: summary %s, table %s" % (un and un["number"], nl["activities"]))
# activities per device
listed = sorted(d["activities"] for d in devices if d["activities"])
summed = sorted(d["activities"] for d in rows("summary", "Devices") if d["activities"])
if listed != summed:
    why.append("device activities: --list %s, summary %s" % (listed, summed))
# cross-thread ranges
async_n = db.execute("SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind "
                     "WHERE e.flags & 1 AND k.name IN ('range', 'op')").fetchone()[0]
ct = run.get("cross-thread ranges")
if (ct["number"] if ct else 0) != async_n:
    why.append("cross-thread ranges: summary %s, run.db %s" % (ct and ct["number"], async_n))
# op and range calls, a merged redispatch once
calls = dict(((n, k), c) for n, k, c in db.execute(
    "SELECT s.value, k.name, count(*) FROM events e JOIN kinds k ON k.id = e.kind JOIN strings s "
    "ON s.id = e.name_id WHERE k.name IN ('range', 'op') AND (e.flags & 32) = 0 GROUP BY 1, 2"))
nvtx = {(r["name"], r["kind"]): r["instances"] for r in rows("nvtx", "NVTX ranges and ops")}
if nvtx != calls:
    bad = sorted(k for k in set(nvtx) | set(calls) if nvtx.get(k) != calls.get(k))[:3]
    why.append("nvtx instances differ from run.db: %s" % [(k, nvtx.get(k), calls.get(k)) for k in bad])
for r in by_name["nvtx-gpu"]["tables"][0]["rows"] if by_name["nvtx-gpu"]["tables"] else []:
    if r["instances"] > calls.get((r["name"], r["kind"]), 0):
        why.append("nvtx-gpu: %s has %s instances, %s calls" % (r["name"], r["instances"],
                                                                calls.get((r["name"], r["kind"]), 0)))
        break
for r in rows("summary", "Top ops and ranges"):
    n = sum(c for (name, kind), c in calls.items() if name == r["name"])
    if r["count"] != n:
        why.append("summary top op %s: %s calls, run.db %s" % (r["name"], r["count"], n))
        break
open("why.txt", "w").write("; ".join(why))
sys.exit(1 if why else 0)
PY
done
# gaps top=0: the totals by class, no gap listed
expect_status 0 "$BIN/trace-ingest" -q -o a.db "$TRACES"/kineto/HTA__critical_path_alexnet_trace.json.gz
expect_status 0 "$BIN/trace-analyze" --report gaps:min=0:top=0 --format json a.db
python3 -c "
import json, sys
t = json.load(open(sys.argv[1]))['reports'][0]['tables']
listed = [x for x in t if x['rows'] and 'gap_ns' in x['rows'][0]]
assert not listed and any(x['rows'] for x in t), t
" "$TMP/out" || fail "gaps top=0 lists gaps, or no totals"
# an op recorded with an empty shape list and the same op recorded without
# shapes are one group (PyTorch prints both as "[]"): the two resnet50 traces,
# one with record_shapes and one without, join their optimizer rows
K=$TRACES/kineto
expect_status 0 "$BIN/trace-ingest" -q -o rA.db "$K"/kineto__plugin_resnet50_nw0_worker0_TOPLEVEL_ARRAY.pt.trace.json.gz
expect_status 0 "$BIN/trace-ingest" -q -o rB.db "$K"/kineto__tb_plugin_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz
expect_status 0 "$BIN/trace-analyze" --diff --group-by-shape -n -1 --format csv rA.db rB.db
expect_eq "$(grep -c '^Optimizer.step#SGD.step,' "$TMP/out")" 1 "one Optimizer.step row in the shape diff"
# the table of several run.dbs is the table of one run.db holding them, ties
# included: a GPU activity without its launching call is first in two rows (its
# own and [no launching call]), which keep the order they have in one run.db
expect_status 0 "$BIN/trace-ingest" -q -o rAB.db "$K"/kineto__plugin_resnet50_nw0_worker0_TOPLEVEL_ARRAY.pt.trace.json.gz \
    "$K"/kineto__tb_plugin_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz
for key in none self_cpu_time_total cpu_time_total count cpu_memory_usage; do
    "$BIN/trace-analyze" -n -1 --format csv -s $key rA.db rB.db >many.csv 2>/dev/null
    "$BIN/trace-analyze" -n -1 --format csv -s $key rAB.db >one.csv 2>/dev/null
    cmp -s many.csv one.csv || fail "-s $key: the table of rA.db rB.db differs from rAB.db's: $(diff many.csv one.csv | head -3)"
done
