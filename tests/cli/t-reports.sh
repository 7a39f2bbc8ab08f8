# trace-analyze --report: the report table, usage errors, each report on hand-made
# fixtures with known answers, and on the shared traces against their references,
# direct SQL over the source tables, and invariants.

# --- the report table and usage errors ---
expect_status 0 "$BIN/trace-analyze" --report list
expect_grep '^gpu-time ' "$TMP/out"
cp "$TMP/out" list.txt
expect_status 2 "$BIN/trace-analyze" --report gpu-time,nope x.db
expect_one_line_error
expect_grep "unknown report 'nope'" "$TMP/err"
expect_grep "gpu-time" "$TMP/err"
expect_status 2 "$BIN/trace-analyze" --report gpu-time:micro=fast x.db
expect_one_line_error
expect_status 2 "$BIN/trace-analyze" --report gpu-time:nothing=1 x.db
expect_one_line_error
expect_grep 'micro' "$TMP/err"

# every report in the list has a section in docs/reports.md
docs="$GOLDEN_DIR/../../../docs/reports.md"
for r in $(awk '/^[a-z]/ {print $1}' list.txt); do
    grep -q "^## \`$r\`" "$docs" || fail "docs/reports.md lacks a section for report $r"
done

# --- gpu-time on a hand-made Kineto trace (µs):
#   device 0: gemm [10,20)  nccl [15,30)  memcpy [25,40)  memset [45,46)  RCCL [60,70)
#             a kernel at [0,5) whose launch is not in the trace (excluded)
#   device 1: a kernel at [100,110)
python3 - <<'PY'
import json
ev = []
def rt(corr, ts):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100,
               "ts": ts, "dur": 0.5, "args": {"correlation": corr}})
def gpu(cat, name, ts, dur, corr, dev=0, stream=7):
    ev.append({"ph": "X", "cat": cat, "name": name, "pid": dev, "tid": stream, "ts": ts, "dur": dur,
               "args": {"device": dev, "stream": stream, "correlation": corr}})
for c in range(1, 7):
    rt(c, c)
gpu("kernel", "gemm_k1", 10, 10, 1)
gpu("kernel", "ncclDevKernel_AllReduce", 15, 15, 2)
gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 25, 15, 3)
gpu("gpu_memset", "Memset (Device)", 45, 1, 4)
gpu("kernel", "RCCL_generic", 60, 10, 5)
gpu("kernel", "early_kernel", 0, 5, 99)
gpu("kernel", "dev1_kernel", 100, 10, 6, dev=1, stream=9)
json.dump({"traceEvents": ev}, open("timeline.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o timeline.db timeline.json
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv timeline.db
cp "$TMP/out" gt.csv
# all devices: comp [10,20)+[45,46) = 11+10 (dev 1); comm 25; exposed comm [20,30)+[60,70) = 20;
# exposed memcpy [30,40) = 10; busy 51; total 100; gaps 5 (micro) 14 and 30 (macro)
expect_eq "$(grep '^all,' gt.csv | cut -d, -f2,3 | tr '\n' ' ')" \
    "computation_time,21000 exposed_comm_time,20000 exposed_memcpy_time,10000 busy_time,51000 idle_time,49000 micro_idle_time,5000 macro_idle_time,44000 total_time,100000 total_comm_time,25000 total_memcpy_time,15000 " \
    "gpu-time: overall breakdown"
expect_eq "$(grep '^0,' gt.csv | cut -d, -f2,3,5 | tr '\n' ' ')" \
    "computation_time,11000,18.3333333333333 exposed_comm_time,20000,33.3333333333333 exposed_memcpy_time,10000,16.6666666666667 busy_time,41000,68.3333333333333 idle_time,19000,31.6666666666667 micro_idle_time,5000,8.33333333333333 macro_idle_time,14000,23.3333333333333 total_time,60000,100 total_comm_time,25000,41.6666666666667 total_memcpy_time,15000,25 " \
    "gpu-time: device 0"
expect_eq "$(grep -c '^1,' gt.csv)" "10" "gpu-time: device 1 rows"
expect_status 0 "$BIN/trace-analyze" --report gpu-time:micro=3us --format csv timeline.db
expect_eq "$(grep '^all,m' "$TMP/out" | cut -d, -f3 | tr '\n' ' ')" "0 49000 " "gpu-time: micro threshold"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --device 1 --format csv timeline.db
expect_eq "$(grep -c '^all,' "$TMP/out")$(grep -c '^1,' "$TMP/out")" "100" "gpu-time --device 1: one device"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --exclude '(?i)nccl' --format csv timeline.db
expect_eq "$(grep '^all,total_comm_time' "$TMP/out" | cut -d, -f3)" "10000" "gpu-time --exclude"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --units us timeline.db
expect_grep 'excluded: 1 GPU activities' "$TMP/out"
golden reports-gpu-time.txt "$TMP/out"
for f in json markdown; do
    expect_status 0 "$BIN/trace-analyze" --report gpu-time --format $f timeline.db
    golden reports-gpu-time.$f "$TMP/out"
done
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format json timeline.db
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['reports'][0]['tables'][0]['rows'][0]['time_ns']==21000" \
    "$TMP/out" || fail "gpu-time json does not parse or lacks its rows"

# no GPU activity: one line, exit 0, nothing on stdout
python3 -c "
import json; json.dump({'traceEvents': [{'ph': 'X', 'cat': 'cpu_op', 'name': 'aten::add', 'pid': 1, 'tid': 1, 'ts': 1, 'dur': 2}]}, open('cpu.json', 'w'))"
expect_status 0 "$BIN/trace-ingest" -q -o cpu.db cpu.json
expect_status 0 "$BIN/trace-analyze" --report gpu-time cpu.db
expect_one_line_error
expect_grep 'gpu-time: no GPU activity' "$TMP/err"
expect_eq "$(wc -c <"$TMP/out")" "0" "no data: empty stdout"

need_traces || return 0

# --- gpu-time against TraceLens's gpu_timeline.csv of the same three traces ---
# TraceLens sums float microseconds of timestamps near 1.4e12 us, so each of its
# interval ends carries up to 2^-13 us (0.12 ns) of rounding; our sums are exact ns.
# Each row agrees to 1e-6 relative to the row, or to the total time for rows so
# small that TraceLens's own rounding is larger than that (its exposed_memcpy_time
# of Qwen is 2367.92 ns for a 2368 ns copy).
for pair in "bert-small-uncased:h100_gaunernst_bert-small-uncased__1016001" \
            "Qwen1.5-0.5B-Chat:h100_Qwen_Qwen1.5-0.5B-Chat__1016005" \
            "timesformer-base-k400:h100_facebook_timesformer-base-finetuned-k400__1016002"; do
    t=${pair%%:*} ref=$TRACES/kineto/reference/${pair#*:}/gpu_timeline.csv
    expect_status 0 "$BIN/trace-ingest" -q -o tl-$t.db "$TRACES"/kineto/TraceLens__h100_*$t*.json.gz
    expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv tl-$t.db
    python3 - "$ref" "$TMP/out" "$t" <<'PY' || fail "gpu-time differs from TraceLens on $t"
import csv, sys
ref = {r["type"]: (float(r["time ms"]), float(r["percent"])) for r in csv.DictReader(open(sys.argv[1]))}
ours = {r["type"]: (float(r["time_ms"]), float(r["percent"])) for r in csv.DictReader(open(sys.argv[2]))
        if r["device"] == "all"}
total = ref["total_time"][0]
bad = 0
for k, (ms, pct) in ref.items():
    oms, opct = ours[k]
    if abs(oms - ms) > 1e-6 * max(abs(ms), total) or abs(opct - pct) > 1e-6 * 100:
        print(f"{sys.argv[3]}: {k}: ours {oms} ms {opct} %, TraceLens {ms} ms {pct} %", file=sys.stderr)
        bad = 1
# and never more than TraceLens's rounding allows: 0.25 ns per interval end it summed
for k in ("computation_time", "busy_time", "idle_time", "total_time"):
    if abs(ours[k][0] - ref[k][0]) * 1e6 > 0.25 * 2 * 2000:
        print(f"{sys.argv[3]}: {k} further from TraceLens than its rounding explains", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
done

# --- every shared trace: ingest once, then invariants of every report ---
for f in "$TRACES"/nvprof/* "$TRACES"/nsys/* "$TRACES"/kineto/*.json*; do
    b=$(basename "$f"); b=${b%%.*}
    "$BIN/trace-ingest" -q -o "all-$b.db" "$f" 2>/dev/null || rm -f "all-$b.db"
done
n=$(ls all-*.db | wc -l)
[ "$n" -ge 20 ] || fail "only $n shared traces ingested"
for db in all-*.db; do
    expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv "$db"
    [ -s "$TMP/out" ] || { expect_grep 'gpu-time: no GPU activity' "$TMP/err"; continue; }
    python3 - "$TMP/out" "$db" <<'PY' || fail "gpu-time invariants on $db"
import csv, sys, collections
rows = collections.defaultdict(dict)
for r in csv.DictReader(open(sys.argv[1])):
    rows[r["device"]][r["type"]] = (int(r["time_ns"]), float(r["percent"]) if r["percent"] else None)
bad = 0
for dev, v in rows.items():
    t = lambda k: v[k][0]
    checks = [
        t("computation_time") + t("exposed_comm_time") + t("exposed_memcpy_time") + t("idle_time") == t("total_time"),
        t("busy_time") == t("computation_time") + t("exposed_comm_time") + t("exposed_memcpy_time"),
        t("micro_idle_time") + t("macro_idle_time") == t("idle_time"),
        t("exposed_comm_time") <= t("total_comm_time"),
        t("exposed_memcpy_time") <= t("total_memcpy_time"),
        all(ns >= 0 and (p is None or 0 <= p <= 100) for ns, p in v.values()),
    ]
    if not all(checks):
        print(sys.argv[2], dev, checks, v, file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
done
