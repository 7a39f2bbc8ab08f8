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
expect_status 2 "$BIN/trace-analyze" --report kernels:device=2 x.db
expect_one_line_error
expect_grep 'device=0 or 1' "$TMP/err"

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
# host ranges around the launches: outer holds all six, inner only the copy's
ev.append({"ph": "X", "cat": "user_annotation", "name": "outer", "pid": 100, "tid": 100, "ts": 0.5, "dur": 7.5})
ev.append({"ph": "X", "cat": "user_annotation", "name": "inner", "pid": 100, "tid": 100, "ts": 2.9, "dur": 1.1})
ev.append({"ph": "X", "cat": "user_annotation", "name": "idle range", "pid": 100, "tid": 100, "ts": 7, "dur": 0.5})
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
expect_status 0 "$BIN/trace-analyze" --report gpu-time --thread 100 --format csv timeline.db
expect_eq "$(grep -c '^all,' "$TMP/out")$(grep '^all,computation_time' "$TMP/out" | cut -d, -f3)" "1021000" "gpu-time --thread"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --kind kernel --format csv timeline.db
expect_eq "$(grep -E '^all,(computation|total_memcpy)' "$TMP/out" | cut -d, -f3 | tr '\n' ' ')" "20000 0 " "gpu-time --kind kernel"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --time-range 20us: --format csv timeline.db
expect_eq "$(grep -E '^all,(computation|total_time)' "$TMP/out" | cut -d, -f3 | tr '\n' ' ')" "11000 85000 " "gpu-time --time-range"
expect_status 0 "$BIN/trace-analyze" --report gpu-time -n 2 --format json timeline.db
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['reports'][0]['tables'][0]; assert t['rows_total'] == 30 and len(t['rows']) == 2" \
    "$TMP/out" || fail "json: -n keeps rows_total"
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

# --- gpu-time's classes for the kernel names TraceLens treats specially: vLLM's
# custom all-reduce is communication; ROCm 7.1's copy kernels (cat kernel) are
# memcpy, its fill kernels computation; names only like them are computation.
python3 - <<'PY'
import json
ev, t = [], 0
kernels = [("cross_device_reduce_1stage<float, 8>", "comm"), ("void vllm::Cross_Device_Reduce_2stage", "comm"),
           ("MEMORY_COPY_HOST_TO_DEVICE", "copy"), ("__amd_rocclr_copyBufferRectAligned.kd", "copy"),
           ("__amd_rocclr_copyBuffer", "copy"), ("__amd_rocclr_fillBufferAligned.kd", "comp"),
           ("__amd_rocclr_copyBufferX", "comp"), ("MEMORY_COPY_HOST_TO_DEVICE_2", "comp"),
           ("my_memory_copy_kernel", "comp")]
for corr, (name, _) in enumerate(kernels, 1):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1,
               "ts": corr, "dur": 0.5, "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 100 * corr, "dur": 10,
               "args": {"device": 0, "stream": 7, "correlation": corr}})
json.dump({"traceEvents": ev}, open("classes.json", "w"))
want = {c: 10000 * sum(1 for _, k in kernels if k == c) for c in ("comm", "copy", "comp")}
open("classes.want", "w").write("%d %d %d " % (want["comp"], want["comm"], want["copy"]))
PY
expect_status 0 "$BIN/trace-ingest" -q -o classes.db classes.json
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv classes.db
expect_eq "$(grep -E '^all,(computation_time|total_comm_time|total_memcpy_time)' "$TMP/out" | cut -d, -f3 | tr '\n' ' ')" \
    "$(cat classes.want)" "gpu-time: cross_device_reduce is communication, ROCm copy kernels memcpy"

# --- gpu-time in TraceLens's float microseconds: a Kineto trace whose ts lie near
# 1.4e12 us after a baseTimeNanoseconds.  TraceLens measures float64 ts and
# ts + dur; time_ms and percent must be those floats' rows (computed here the
# way TraceLens does), time_ns the exact ns.  A second source with another base
# shares no clock with the first: its rows of `all` fall back to exact ns.
python3 - <<'PY'
import json
def trace(base, path):
    ev = []
    def pair(cat, name, ts, dur, corr):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": 1400000000000.001 + corr, "dur": 0.5, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
    pair("kernel", "gemm", 1400000000010.123, 2.368, 1)
    pair("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 1400000000011.001, 3.501, 2)
    pair("kernel", "ncclDevKernel_AllReduce", 1400000000014.003, 1.257, 3)
    pair("kernel", "gemm", 1400000000016.007, 0.993, 4)
    pair("gpu_memset", "Memset (Device)", 1400000000040.011, 1.111, 5)
    json.dump({"baseTimeNanoseconds": base, "traceEvents": ev}, open(path, "w"))
    # TraceLens: merge sorted float intervals (touching ones too), measure, subtract
    def merge(iv):
        out = []
        for s, e in sorted(iv):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return out
    def minus(a, b):   # b minus a, both merged
        res = []
        for bs, be in b:
            cur = bs
            for s, e in a:
                if e <= cur or s >= be:
                    continue
                if s > cur:
                    res.append((cur, s))
                cur = max(cur, e)
            if cur < be:
                res.append((cur, be))
        return res
    size = lambda iv: sum(e - s for s, e in iv)
    cls = {"comp": [], "comm": [], "mem": []}
    for e in ev:
        if e["pid"] == 0:
            k = "mem" if e["cat"] == "gpu_memcpy" else "comm" if "nccl" in e["name"] else "comp"
            cls[k].append((e["ts"], e["ts"] + e["dur"]))
    comp, comm, mem = merge(cls["comp"]), merge(cls["comm"]), merge(cls["mem"])
    al = merge(cls["comp"] + cls["comm"] + cls["mem"])
    total = al[-1][1] - al[0][0]
    rows = {"computation_time": size(comp), "exposed_comm_time": size(minus(comp, comm)),
            "exposed_memcpy_time": size(minus(comm, minus(comp, mem))), "busy_time": size(al),
            "idle_time": total - size(al), "total_time": total,
            "total_comm_time": size(comm), "total_memcpy_time": size(mem)}
    return {k: (v / 1e3, v / total * 100) for k, v in rows.items()}
json.dump(trace(1751410836000000000, "tl-float.json"), open("tl-float.expect", "w"))
trace(1751410837000000000, "tl-float2.json")
PY
expect_status 0 "$BIN/trace-ingest" -q -o tl-float.db tl-float.json
expect_eq "$(q tl-float.db "SELECT value FROM meta WHERE key = 'time_base_ns.1'")" "1751410836000000000" \
    "the Kineto time base is kept in meta"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv tl-float.db
python3 - tl-float.expect "$TMP/out" <<'PY' || fail "gpu-time does not redo TraceLens's float arithmetic"
import csv, json, sys
exp = json.load(open(sys.argv[1]))
rows = {r["type"]: r for r in csv.DictReader(open(sys.argv[2])) if r["device"] == "all"}
bad = 0
for k, (ms, pct) in exp.items():
    oms, opct = float(rows[k]["time_ms"]), float(rows[k]["percent"])
    if abs(oms - ms) > 1e-13 * abs(ms) or abs(opct - pct) > 1e-13 * abs(pct):
        print(k, oms, ms, opct, pct, file=sys.stderr)
        bad = 1
# the 2368 ns gemm alone is 2367.919921875 ns in floats; time_ns stays exact
if rows["total_memcpy_time"]["time_ns"] != "3501" or rows["total_memcpy_time"]["time_ms"] == "0.003501":
    print("total_memcpy_time", rows["total_memcpy_time"], file=sys.stderr)
    bad = 1
sys.exit(bad)
PY
expect_status 0 "$BIN/trace-ingest" -q -o tl-float2.db tl-float.json tl-float2.json
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv tl-float2.db
python3 - tl-float.expect "$TMP/out" <<'PY' || fail "gpu-time with two time bases"
import csv, json, sys
exp = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2])))
bad = 0
for r in rows:
    if r["device"] == "all" and abs(float(r["time_ms"]) * 1e6 - int(r["time_ns"])) > 1e-6:
        print("all", r, file=sys.stderr)
        bad = 1
    if r["device"] != "all" and r["type"] in exp \
            and abs(float(r["time_ms"]) - exp[r["type"]][0]) > 1e-13 * exp[r["type"]][0]:
        print(r, exp[r["type"]], file=sys.stderr)
        bad = 1
sys.exit(bad or len({r["device"] for r in rows}) != 3)
PY

# nvtx-gpu: outer spans [10,110) with busy 30+1+10+10 and 6 activities; inner is the copy
expect_status 0 "$BIN/trace-analyze" --report nvtx-gpu --format csv timeline.db
expect_eq "$(cut -d, -f2,9,11,13 "$TMP/out" | tr '\n' ' ')" \
    "total_span_ns,total_busy_ns,gpu_ops,name 100000,51000,6,outer 15000,15000,1,inner " "nvtx-gpu projection"
expect_status 0 "$BIN/trace-analyze" --report nvtx-gpu --device 0 --format csv timeline.db
expect_eq "$(grep outer "$TMP/out" | cut -d, -f2,9,11)" "60000,41000,5" "nvtx-gpu --device 0"
expect_status 0 "$BIN/trace-analyze" --report nvtx-gpu timeline.db
expect_grep '1 range instances launched no GPU work' "$TMP/out"
for r in summary kernels api memcpy nvtx nvtx-gpu; do
    expect_status 0 "$BIN/trace-analyze" --report $r --units us timeline.db
    golden reports-$r.txt "$TMP/out"
done
expect_status 0 "$BIN/trace-analyze" --report kernels:stream=1,memcpy --format csv timeline.db
golden reports-kernels-memcpy.csv "$TMP/out"

# steps: ProfilerStep#1 on thread 1 is [0,100); its backward runs on thread 2 (launch at 50);
# step 2 is [100,200); thread 1 launches at 120 and at 150 (a copy)
python3 - <<'PY'
import json
ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100}]
def launch(tid, ts, corr, cat, name, gts, gdur):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": ts, "dur": 2,
               "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": gts, "dur": gdur,
               "args": {"device": 0, "stream": 7, "correlation": corr}})
launch(2, 50, 1, "kernel", "bwd_kernel", 60, 10)
launch(1, 120, 2, "kernel", "fwd_kernel", 130, 10)
launch(1, 150, 3, "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 145, 20)
json.dump({"traceEvents": ev}, open("steps.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o steps.db steps.json
expect_status 0 "$BIN/trace-analyze" --report steps --format csv steps.db
# step 2: kernel [130,140) and copy [145,165): span 35, busy 30, exposed memcpy 20, idle 5
expect_eq "$(cut -d, -f1-4,6-11 "$TMP/out" | tr '\n' ' ')" \
    "step,wall_ns,gpu_span_ns,busy_ns,computation_ns,exposed_comm_ns,exposed_memcpy_ns,idle_ns,kernels,slowest 1,100000,10000,10000,10000,0,0,0,1,* 2,100000,35000,30000,10000,0,20000,5000,1, " \
    "steps: work by window across threads"
expect_status 0 "$BIN/trace-analyze" --report kernels --step 1 --format csv steps.db
expect_eq "$(cut -d, -f3,9 "$TMP/out" | tail -n +2)" "1,bwd_kernel" "--step 1: the backward kernel launched on another thread"
expect_status 0 "$BIN/trace-analyze" --report api,kernels --step 2 --format csv steps.db
expect_eq "$(grep -c fwd_kernel "$TMP/out")$(grep -c bwd_kernel "$TMP/out")$(grep cudaLaunchKernel "$TMP/out" | cut -d, -f3)" "102" "--step 2"
expect_status 3 "$BIN/trace-analyze" --report steps --step 3 steps.db
expect_one_line_error
expect_grep 'step 3: no such ProfilerStep#N range (steps: 1 2)' "$TMP/err"
expect_status 2 "$BIN/trace-analyze" --report steps --step 2-1 steps.db
expect_one_line_error
expect_status 2 "$BIN/trace-analyze" --step 1 steps.db
expect_one_line_error
expect_status 0 "$BIN/trace-analyze" --report steps timeline.db
expect_grep 'steps: no ProfilerStep#N' "$TMP/err"

# launch: each launch call lasts 0.5us; queue delay = kernel start - call start
expect_status 0 "$BIN/trace-analyze" --report launch --format csv timeline.db
expect_eq "$(sed -n 2,5p "$TMP/out" | cut -d, -f1,3,7,10,12 | tr '\n' ' ')" \
    "1,500,9000,0,gemm_k1 1,500,13000,0,ncclDevKernel_AllReduce 1,500,55000,0,RCCL_generic 1,500,94000,0,dev1_kernel " \
    "launch: overhead and queue delay"
expect_grep '^1,20,5000,10,5000,early_kernel$' "$TMP/out"
# gaps: on device 0, [0,5) -> [10,..): 5us, while launch call 5 was open; [40,45): 5us; [46,60): 14us
expect_status 0 "$BIN/trace-analyze" --report gaps:min=1us:kwait=6us --format csv timeline.db
expect_eq "$(sed -n 2,4p "$TMP/out" | tr '\n' ' ')" \
    "0,46000,14000,other,,RCCL_generic,tid 100: nothing open 0,5000,5000,kernel wait,,gemm_k1,tid 100: cudaLaunchKernel (runtime) 0,40000,5000,kernel wait,,Memset (Device),tid 100: nothing open " \
    "gaps: listed largest first with the host at their start"
expect_grep '^other,1,14000,' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --report gaps:min=1us:top=1 --format csv timeline.db
expect_eq "$(grep -c '^0,' "$TMP/out")" "1" "gaps:top=1"
# steps.db: the copy [145,165) was launched at 150, after the gap [140,145) began: host wait
# (80us after the first GPU activity), while thread 1 was inside ProfilerStep#2
expect_status 0 "$BIN/trace-analyze" --report gaps:min=1us:kwait=1us --format csv steps.db
expect_grep '^0,80000,5000,host wait,10000,Memcpy DtoH (Device -> Pageable),tid 2: nothing open; tid 1: ProfilerStep#2 (range)$' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --report advice timeline.db
expect_grep 'nothing found' "$TMP/out"
for r in launch gaps steps advice; do
    expect_status 0 "$BIN/trace-analyze" --report $r --units us steps.db
    golden reports-$r.txt "$TMP/out"
done

# CUDA graphs: the two kernels replayed by the first cudaGraphLaunch count for it; the second
# launch has no kernel records (a graph traced as a whole), which the reports say
python3 - <<'PY'
import json
ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 1}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": 10, "dur": 2, "args": {"correlation": 2}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 2, "args": {"correlation": 3}}]
for i, (corr, ts) in enumerate([(1, 5), (1, 8), (3, 30)]):
    ev.append({"ph": "X", "cat": "kernel", "name": "k%d" % i, "pid": 0, "tid": 7, "ts": ts, "dur": 2,
               "args": {"device": 0, "stream": 7, "correlation": corr}})
json.dump({"traceEvents": ev}, open("graph.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o graph.db graph.json
expect_status 0 "$BIN/trace-analyze" --report gpu-time graph.db
expect_grep 'warning: 1 CUDA graph launches have no kernel records' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv graph.db
expect_eq "$(grep '^all,computation_time' "$TMP/out" | cut -d, -f3)" "6000" "graph kernels count"
expect_status 0 "$BIN/trace-analyze" --report summary --format csv graph.db
expect_grep '^CUDA graph launches,1 without kernel records' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --report launch --format csv graph.db
expect_grep '^1,2000,2000,2000,2000,7000,7000,7000,7000,0,0,k1$' "$TMP/out"

# no GPU activity: one line, exit 0, nothing on stdout
python3 -c "
import json; json.dump({'traceEvents': [{'ph': 'X', 'cat': 'cpu_op', 'name': 'aten::add', 'pid': 1, 'tid': 1, 'ts': 1, 'dur': 2}]}, open('cpu.json', 'w'))"
expect_status 0 "$BIN/trace-ingest" -q -o cpu.db cpu.json
expect_status 0 "$BIN/trace-analyze" --report gpu-time cpu.db
expect_one_line_error
expect_grep 'gpu-time: no GPU activity' "$TMP/err"
expect_eq "$(wc -c <"$TMP/out")" "0" "no data: empty stdout"

# hostile times (an end before its start, the int64 limits): left out and counted, never
# a crash, a negative time or a NaN
cp timeline.db hostile.db
q hostile.db "update events set end_ns = 9223372036854775807 where id = (select min(id) from events where kind = 7);
  update events set start_ns = -9223372036854775808 where id = (select max(id) from events where kind = 7);
  update events set end_ns = start_ns - 5 where kind = 8"
for r in $(awk '/^[a-z]/ {print $1}' list.txt); do
    expect_status 0 "$BIN/trace-analyze" --report $r --format csv hostile.db
    grep -qi 'nan\|inf\|,-[0-9]' "$TMP/out" && fail "$r on hostile times: $(grep -i 'nan\|inf\|,-[0-9]' "$TMP/out" | head -1)"
done
expect_status 0 "$BIN/trace-analyze" --report gpu-time --format csv hostile.db
expect_grep 'gpu-time: warning: 3 event(s) with impossible times' "$TMP/err"
expect_status 0 "$BIN/trace-export" --html -o hostile.html hostile.db

need_traces || return 0

# --- gpu-time against TraceLens's gpu_timeline.csv of the same three traces ---
# TraceLens reads ts and dur as float64 microseconds (near 1.4e12 us, spaced
# 2^-12 us apart) and measures those floats; time_ms and percent redo its
# arithmetic from the ns and the file's baseTimeNanoseconds, so every row agrees
# to 1e-6 of itself (csv prints 15 digits): its exposed_memcpy_time of Qwen is
# 2367.919921875 ns for a 2368 ns copy, and so is ours.  time_ns stays exact.
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
bad = 0
for k, (ms, pct) in ref.items():
    oms, opct = ours[k]
    if abs(oms - ms) > 1e-6 * abs(ms) or abs(opct - pct) > 1e-6 * abs(pct):
        print(f"{sys.argv[3]}: {k}: ours {oms} ms {opct} %, TraceLens {ms} ms {pct} %", file=sys.stderr)
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
    rows[r["device"]][r["type"]] = (int(r["time_ns"]), float(r["percent"]) if r["percent"] else None,
                                    float(r["time_ms"]))
bad = 0
for dev, v in rows.items():
    t = lambda k: v[k][0]
    m = lambda k: v[k][2]
    # time_ms holds TraceLens's float arithmetic: its sums hold to the rounding of
    # each row to float64 and of csv to 15 digits, 1e-12 of the total
    near = lambda a, b: abs(a - b) <= 1e-12 * m("total_time")
    checks = [
        t("computation_time") + t("exposed_comm_time") + t("exposed_memcpy_time") + t("idle_time") == t("total_time"),
        t("busy_time") == t("computation_time") + t("exposed_comm_time") + t("exposed_memcpy_time"),
        t("micro_idle_time") + t("macro_idle_time") == t("idle_time"),
        t("exposed_comm_time") <= t("total_comm_time"),
        t("exposed_memcpy_time") <= t("total_memcpy_time"),
        all(ns >= 0 and ms >= 0 and (p is None or 0 <= p <= 100) for ns, p, ms in v.values()),
        near(m("computation_time") + m("exposed_comm_time") + m("exposed_memcpy_time") + m("idle_time"), m("total_time")),
        near(m("busy_time"), m("computation_time") + m("exposed_comm_time") + m("exposed_memcpy_time")),
        near(m("micro_idle_time") + m("macro_idle_time"), m("idle_time")),
        m("exposed_comm_time") <= m("total_comm_time") and m("exposed_memcpy_time") <= m("total_memcpy_time"),
    ]
    if not all(checks):
        print(sys.argv[2], dev, checks, v, file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
done

# --- kernels, api, memcpy, nvtx on the six Nsight Systems exports equal direct SQL
# over their source tables; kernel totals equal the key_averages table's --kind kernel ---
for f in "$TRACES"/nsys/*.sqlite; do
    b=$(basename "$f"); db=all-${b%%.*}.db
    [ -f "$db" ] || { fail "$b was not ingested"; continue; }
    for r in kernels api memcpy nvtx; do
        "$BIN/trace-analyze" --report $r --format csv -n -1 "$db" >"rep-$r.csv" 2>/dev/null \
            || fail "--report $r on $b"
    done
    "$BIN/trace-analyze" --kind kernel --format csv -n -1 "$db" >table-kernels.csv 2>/dev/null
    python3 - "$f" "$b" <<'PY' || fail "report sums differ from the source tables of $b"
import collections, csv, os, re, sqlite3, sys
src = sqlite3.connect(sys.argv[1])
def q(sql):
    try:
        return src.execute(sql).fetchall()
    except sqlite3.OperationalError:   # the export has no such table
        return []
def rows(name):
    return list(csv.DictReader(open(name))) if os.path.getsize(name) else []
bad = []
def same(what, ours, theirs):
    if ours != theirs:
        bad.append(f"{what}: ours {ours}, source {theirs}")

# kernels, per demangled name: instances, total, min, max
k = {r["name"]: r for r in rows("rep-kernels.csv")}
for name, n, tot, mn, mx in q("""select coalesce(s.value, ''), count(*), sum(k.end - k.start), min(k.end - k.start),
        max(k.end - k.start) from CUPTI_ACTIVITY_KIND_KERNEL k left join StringIds s on s.id = k.demangledName
        group by k.demangledName"""):
    r = k.pop(name, None)
    same(f"kernel {name[:50]}", r and (int(r["instances"]), int(r["total_ns"]), int(r["min_ns"]), int(r["max_ns"])),
         (n, tot, mn, mx))
same("kernels not in the source", list(k), [])
# the median of one kernel by SQL: the middle of its sorted durations
for name, in q("select s.value from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id = k.demangledName group by 1 order by count(*) desc limit 1"):
    d = [x for x, in q(f"""select k.end - k.start from CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id = k.demangledName
          where s.value = '{name.replace("'", "''")}' order by 1""")]
    med = (d[(len(d) - 1) // 2] + d[len(d) // 2]) / 2
    same(f"median of {name[:50]}", float({r["name"]: r for r in rows("rep-kernels.csv")}[name]["med_ns"]), med)
# kernel totals of the key_averages table
t = [r for r in rows("table-kernels.csv") if r["device"] == "gpu"]
same("kernel totals vs --kind kernel", (sum(int(r["calls"]) for r in t), sum(int(r["self_gpu_ns"]) for r in t)),
     tuple(q("select count(*), coalesce(sum(end - start), 0) from CUPTI_ACTIVITY_KIND_KERNEL")[0]) if q("select 1 from CUPTI_ACTIVITY_KIND_KERNEL limit 1") else (0, 0))

# API calls, per function (nsys names carry a _vNNNN version suffix)
api = collections.defaultdict(lambda: [0, 0])
for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"):
    for name, n, tot in q(f"""select s.value, count(*), sum(r.end - r.start) from {table} r
            join StringIds s on s.id = r.nameId group by r.nameId"""):
        key = re.sub(r"_v\d+$", "", name)
        api[key][0] += n
        api[key][1] += tot
ours = collections.defaultdict(lambda: [0, 0])
for r in rows("rep-api.csv"):
    ours[r["name"]][0] += int(r["instances"])
    ours[r["name"]][1] += int(r["total_ns"])
same("API calls", dict(ours), dict(api))

# copies by direction, and sets: count, bytes, time
m = rows("rep-memcpy.csv")
kinds = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH", 10: "PtoP"}
theirs = collections.Counter()
for ck, n, by, tot in q("select copyKind, count(*), sum(bytes), sum(end - start) from CUPTI_ACTIVITY_KIND_MEMCPY group by copyKind"):
    theirs[(kinds.get(ck, "?"), "n")] += n; theirs[(kinds.get(ck, "?"), "b")] += by; theirs[(kinds.get(ck, "?"), "t")] += tot
for n, by, tot in q("select count(*), sum(bytes), sum(end - start) from CUPTI_ACTIVITY_KIND_MEMSET where 1 having count(*) > 0"):
    theirs[("memset", "n")] += n; theirs[("memset", "b")] += by; theirs[("memset", "t")] += tot
ours = collections.Counter()
for r in m:
    op = r["operation"].split(" ")[0]
    ours[(op, "n")] += int(r["count"]); ours[(op, "b")] += int(r["total_bytes"]); ours[(op, "t")] += int(r["total_ns"])
same("copies and sets", dict(ours), dict(theirs))

# NVTX push/pop and start/end ranges: instances and total time
n = rows("rep-nvtx.csv")
theirs = q("select count(*), coalesce(sum(end - start), 0) from NVTX_EVENTS where eventType in (59, 60) and end is not null")
same("NVTX ranges", (sum(int(r["instances"]) for r in n), sum(int(r["total_ns"]) for r in n)),
     tuple(theirs[0]) if theirs else (0, 0))
for line in bad:
    print(sys.argv[2] + ": " + line, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
done

# --- steps on every shared trace: windows never overlap, so they sum to at most the span;
# each step's breakdown adds up; --step N gives gpu-time the step's own numbers ---
for db in all-*.db; do
    expect_status 0 "$BIN/trace-analyze" --report steps --format csv "$db"
    [ -s "$TMP/out" ] || continue
    span=$(q "$db" "select max(end_ns) - min(start_ns) from events")
    python3 - "$TMP/out" "$span" "$db" <<'PY' || fail "steps invariants on $db"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
span = int(sys.argv[2])
ok = sum(int(r["wall_ns"]) for r in rows) <= span
for r in rows:
    v = {k: int(r[k]) for k in ("gpu_span_ns", "busy_ns", "computation_ns", "exposed_comm_ns", "exposed_memcpy_ns", "idle_ns")}
    ok &= v["computation_ns"] + v["exposed_comm_ns"] + v["exposed_memcpy_ns"] + v["idle_ns"] == v["gpu_span_ns"]
    ok &= v["busy_ns"] == v["computation_ns"] + v["exposed_comm_ns"] + v["exposed_memcpy_ns"]
    ok &= r["busy_pct"] == "" or 0 <= float(r["busy_pct"]) <= 100
ok &= sum(r["slowest"] == "*" for r in rows) == (1 if len(rows) > 1 else 0)
if not ok:
    print(sys.argv[3], rows, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
    step=$(sed -n 3p "$TMP/out" | cut -d, -f1)
    [ -n "$step" ] || continue
    busy=$(sed -n 3p "$TMP/out" | cut -d, -f4)
    expect_status 0 "$BIN/trace-analyze" --report gpu-time --step "$step" --format csv "$db"
    expect_eq "$(grep '^all,busy_time' "$TMP/out" | cut -d, -f3)" "${busy#0}" "$db: gpu-time --step $step vs steps"
done

# --- launch: launch-bound kernels and a percentile by SQL; gaps add up to the idle time of
# every device; advice's counts are the source's own ---
db=all-kineto__tb_plugin_resnet50_nw0_worker0.db
expect_status 0 "$BIN/trace-analyze" --report launch --format csv -n -1 "$db"
sed '/^$/q' "$TMP/out" >launch.csv
python3 - launch.csv "$db" <<'PY' || fail "launch differs from SQL"
import csv, math, sqlite3, sys
rows = {r["name"]: r for r in csv.DictReader(open(sys.argv[1])) if r.get("name")}
db = sqlite3.connect(sys.argv[2])
q = """select s.value, k.end_ns - k.start_ns, a.end_ns - a.start_ns, max(k.start_ns - a.start_ns, 0)
       from events k join events a on a.id = k.parent_id join strings s on s.id = k.name_id where k.kind = 7"""
per = {}
for name, kd, ad, qd in db.execute(q):
    per.setdefault(name, []).append((kd, ad, qd))
bad = 0
for name, v in per.items():
    r = rows[name]
    ovh = sorted(x[1] for x in v)
    qu = sorted(x[2] for x in v)
    rank = lambda p, n: max(math.ceil(p * n) - 1, 0)
    want = (len(v), sum(1 for x in v if x[0] < x[1]), ovh[rank(.5, len(v))], ovh[rank(.95, len(v))], max(ovh),
            qu[rank(.5, len(v))], qu[rank(.95, len(v))], max(qu))
    got = tuple(int(r[k]) for k in ("kernels", "launch_bound", "overhead_p50_ns", "overhead_p95_ns", "overhead_max_ns",
                                    "queue_p50_ns", "queue_p95_ns", "queue_max_ns"))
    if got != want:
        print(name[:60], got, want, file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
for db in all-*.db; do
    expect_status 0 "$BIN/trace-analyze" --report gaps:min=0 --format csv "$db"
    [ -s "$TMP/out" ] || continue
    python3 - "$TMP/out" "$db" <<'PY' || fail "gaps do not add up to the idle time of $db"
import sqlite3, sys
text = open(sys.argv[1]).read().split("\n\n")[-1].splitlines()
total = sum(int(l.split(",")[2]) for l in text[1:] if l)
db = sqlite3.connect(sys.argv[2])
idle = 0
for dev, in db.execute("select distinct s.device_id from events e join streams s on s.id = e.stream_id where e.kind in (7, 8, 9)"):
    iv = db.execute("""select e.start_ns, e.end_ns from events e join streams s on s.id = e.stream_id
                       where e.kind in (7, 8, 9) and s.device_id = ? order by e.start_ns, e.id""", (dev,)).fetchall()
    end = iv[0][1]
    for a, b in iv[1:]:
        if a > end:
            idle += a - end
        end = max(end, b)
if idle != total:
    print(sys.argv[2], idle, total, file=sys.stderr)
sys.exit(idle != total)
PY
done
expect_status 0 "$BIN/trace-analyze" --report advice --format csv all-DLProf__nsys_profile.db
src=$TRACES/nsys/DLProf__nsys_profile.sqlite
expect_eq "$(grep '^sync-memcpy,' "$TMP/out" | cut -d, -f2)" \
    "$(q "$src" "select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s on s.id = r.nameId where s.value like 'cudaMemcpy%' and s.value not like '%Async%'")" "advice: sync copies"
expect_eq "$(grep '^device-sync,' "$TMP/out" | cut -d, -f2)" \
    "$(q "$src" "select count(*) from CUPTI_ACTIVITY_KIND_RUNTIME r join StringIds s on s.id = r.nameId where s.value like 'cudaDeviceSynchronize%'")" "advice: device syncs"
# pageable source memory (CUPTI kind 0) in copies launched by an Async call
expect_eq "$(grep '^pageable-async-memcpy,' "$TMP/out" | cut -d, -f2)" \
    "$(q "$src" "select count(*) from CUPTI_ACTIVITY_KIND_MEMCPY m join CUPTI_ACTIVITY_KIND_RUNTIME r on r.correlationId = m.correlationId join StringIds s on s.id = r.nameId where (m.srcKind = 0 or m.dstKind = 0) and s.value like '%Async%'")" "advice: pageable async copies"

# --- trace-export --html: one self-contained file that Chromium renders; names escaped;
# under 5 MB for a run of 10^6 events ---
q steps.db "UPDATE strings SET value = '<script>window.pwned=1</script>' WHERE value = 'fwd_kernel'"
expect_status 0 "$BIN/trace-export" --html -o steps.html steps.db
expect_no_grep '<script' steps.html
expect_grep '&lt;script&gt;window.pwned=1&lt;/script&gt;' steps.html
grep -v 'xmlns="http://www.w3.org/2000/svg"' steps.html | grep -q 'https\?://' && fail "the HTML report refers to the network"
for id in summary gpu-time steps top timeline kernels api memcpy nvtx launch gaps advice; do
    expect_grep "id=\"$id\"" steps.html
done
# the timeline: a lane per thread and per stream with GPU work, not the -1 of nvprof's syncs
expect_status 0 "$BIN/trace-ingest" -q -o fq.db "$TRACES/nvprof/FastQSL__prof.nvvp"
expect_status 0 "$BIN/trace-export" --html -o fq.html fq.db
expect_eq "$(q fq.db 'select count(*) from streams where stream = -1')" "1" "FastQSL's stream -1"
expect_no_grep 'stream -1<' fq.html
expect_grep "$(($(q fq.db 'select count(*) from threads') + $(q fq.db 'select count(distinct stream_id) from events where kind in (7, 8, 9)'))) lanes over" fq.html
# 20 ranks of it: 60 threads and streams, of which the 20 idle ones give way before the 48 drawn
expect_status 0 "$BIN/trace-ingest" -q -o fq20.db $(for i in $(seq 20); do echo "$TRACES/nvprof/FastQSL__prof.nvvp"; done)
expect_status 0 "$BIN/trace-export" --html -o fq20.html fq20.db
expect_grep "40 lanes over" fq20.html
expect_no_grep "not drawn" fq20.html
# 30 ranks: 60 lanes for 48 places would leave 6 ranks out, and two lanes a rank do
# not fit either: a lane for each rank's streams, every rank drawn
expect_status 0 "$BIN/trace-ingest" -q -o fq30.db $(for i in $(seq 30); do echo "$TRACES/nvprof/FastQSL__prof.nvvp"; done)
expect_status 0 "$BIN/trace-export" --html -o fq30.html fq30.db
expect_grep "30 lanes over" fq30.html
expect_grep "30 ranks: a lane for each rank's streams" fq30.html
expect_no_grep "more ranks not drawn" fq30.html
expect_eq "$(grep -o '>rank [0-9]* GPU (1)<' fq30.html | sort -u | wc -l)" "30" "30 ranks: a GPU lane each"
expect_no_grep '>rank [0-9]* host' fq30.html
# 130 ranks: the first 128
expect_status 0 "$BIN/trace-ingest" -q -o fq130.db $(for i in $(seq 130); do echo "$TRACES/nvprof/FastQSL__prof.nvvp"; done)
expect_status 0 "$BIN/trace-export" --html -o fq130.html fq130.db
expect_grep "128 lanes over" fq130.html
expect_grep "2 more ranks not drawn" fq130.html
# blinkplus: 9 threads and 16 busy streams a rank.  Two ranks: 50 lanes, the 48 drawn
# show both ranks' threads and GPU work, so each is a lane.  Three: rank 2's streams
# would be left out: a rank's threads are one lane, its streams another
blink="$TRACES/nvprof/blinkplus-nccl-base__output.nvvp"
expect_status 0 "$BIN/trace-ingest" -q -o bl2.db "$blink" "$blink"
expect_status 0 "$BIN/trace-export" --html -o bl2.html bl2.db
expect_grep "48 lanes over" bl2.html
expect_grep "2 more threads and streams not drawn" bl2.html
expect_grep '>rank 1 gpu ' bl2.html
expect_status 0 "$BIN/trace-ingest" -q -o bl3.db "$blink" "$blink" "$blink"
expect_status 0 "$BIN/trace-export" --html -o bl3.html bl3.db
expect_grep "6 lanes over" bl3.html
for r in 0 1 2; do
    expect_grep ">rank $r host (9)<" bl3.html
    expect_grep ">rank $r GPU (16)<" bl3.html
done
# --rank: the selected ranks' lanes only; two ranks, drawn as two ranks are
expect_status 0 "$BIN/trace-export" --html --rank 1,2 -o bl3s.html bl3.db
expect_grep "48 lanes over" bl3s.html
expect_grep '>rank 2 gpu ' bl3s.html
expect_no_grep '>rank 0 ' bl3s.html
expect_status 2 "$BIN/trace-export" --html --device 0 -o sel.html steps.db
expect_one_line_error
expect_no_file sel.html
expect_status 2 "$BIN/trace-export" --html --diff -o sel.html steps.db steps.db
expect_one_line_error
expect_no_file sel.html
if [ -x "$BIN/gen-kineto" ]; then
    expect_status 0 "$BIN/gen-kineto" -n 1000000 -o big.json
    expect_status 0 "$BIN/trace-ingest" -q -o big.db big.json
    rm -f big.json
    expect_status 0 "$BIN/trace-export" --html -o big.html big.db
    size=$(wc -c <big.html)
    [ "$size" -lt 5000000 ] || fail "HTML report of 10^6 events is $size bytes"
fi
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -n "$CHROMIUM" ] && command -v timeout >/dev/null; then
    for h in steps.html big.html; do
        [ -f "$h" ] || continue
        prof=$(mktemp -d "$TMP/prof.XXXXXX")
        timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$prof" \
            --dump-dom "file://$TMP/$h" >"$h.dom" 2>>chromium.log
        grep -q 'id="advice"' "$h.dom" || fail "Chromium did not render $h"
        grep -q 'pwned' "$h.dom" && ! grep -q '&lt;script&gt;window.pwned' "$h.dom" && fail "hostile name not escaped in $h"
        timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$prof" \
            --window-size=1300,2400 --screenshot="$TMP/$h.png" "file://$TMP/$h" 2>>chromium.log
        [ -s "$h.png" ] || fail "no screenshot of $h"
        [ -n "${REPORT_SHOT:-}" ] && cp "$h.png" "$REPORT_SHOT.$h.png"
    done
else
    skip "chromium not installed: the HTML report is not opened"
fi

# --- every report on every shared trace: exit 0, and no NaN, infinity, negative number or
# percent over 100 in any csv cell ---
reports=$(awk '/^[a-z]/ {print $1}' list.txt | tr '\n' ',' | sed 's/,$//')
for db in all-*.db; do
    "$BIN/trace-analyze" --report "$reports" --format csv -n -1 "$db" >every.csv 2>every.err \
        || fail "--report $reports on $db: $(head -c 200 every.err)"
    python3 - every.csv "$db" <<'PY' || fail "bad numbers in the reports of $db"
import csv, math, sys
bad = 0
header = None
for row in csv.reader(open(sys.argv[1])):
    if not row:
        header = None
        continue
    if header is None:
        header = row
        continue
    for key, v in zip(header, row):
        if key in ("name", "next", "host", "evidence", "device", "operation", "kind", "type", "item", "value",
                   "finding", "class", "slowest", "stream", "pid", "tid", "pg", "op", "method"):
            continue
        if v == "":
            continue
        x = float(v)
        # a clock offset is signed: it moves a rank's clock either way
        if not math.isfinite(x) or (x < 0 and key != "offset_ns") or (key.endswith("pct") or key == "percent") and x > 100:
            print(sys.argv[2], key, v, row[:3], file=sys.stderr)
            bad = 1
sys.exit(bad)
PY
done
