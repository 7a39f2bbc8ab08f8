# trace-analyze --report critical-path: the chain that sets each step's time,
# across ranks, and each op's slack, on hand-made Kineto traces whose answer is
# known by construction (times in µs; all ranks on one clock).
#
# Three ranks, ProfilerStep#1 [0, 72) on each:
#   aten::mm [1, 10) > cudaLaunchKernel [2, 4) -> gemm [5, G)      G = 25, 60 (rank 1: the straggler), 25
#   nccl:all_reduce [11, 20) > cudaLaunchKernel [12, 14) -> all-reduce [max(25, G), 70) on the same stream
#   cudaDeviceSynchronize [21, 71)
# Rank 1's slow gemm delays its all-reduce to 60; the all-reduce ends at 70 on
# every rank, 10 after the last rank arrived.  Path: rank 1's step, mm, launch,
# gemm (55 on the path), its all-reduce (arrives last), rank 0's all-reduce (the
# 10 after the last arrival), rank 0's sync, rank 0's step end (ties go to the
# lowest rank).  Ranks 0 and 2 could run their gemm 35 longer before they
# arrived last: slack 35.
python3 - <<'PY'
import json
def host(ev, pid, cat, name, ts, dur, corr=None):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": pid, "ts": ts, "dur": dur}
    if corr is not None:
        e["args"] = {"correlation": corr}
    ev.append(e)
def gpu(ev, name, ts, dur, corr):
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
               "args": {"device": 0, "stream": 7, "correlation": corr}})
def rank(r, gemm_end, shift=0):
    ev, p = [], 10 + r
    host(ev, p, "user_annotation", "ProfilerStep#1", shift, 72)
    host(ev, p, "cpu_op", "aten::mm", shift + 1, 9)
    host(ev, p, "cuda_runtime", "cudaLaunchKernel", shift + 2, 2, 1)
    gpu(ev, "gemm", shift + 5, gemm_end - 5, 1)
    host(ev, p, "cpu_op", "nccl:all_reduce", shift + 11, 9)
    host(ev, p, "cuda_runtime", "cudaLaunchKernel", shift + 12, 2, 2)
    start = max(25, gemm_end)
    gpu(ev, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", shift + start, 70 - start, 2)
    host(ev, p, "cuda_runtime", "cudaDeviceSynchronize", shift + 21, 50)
    doc = {"distributedInfo": {"backend": "nccl", "rank": r, "world_size": 3}, "traceEvents": ev}
    json.dump(doc, open("c%d.json" % r, "w"))
for r, g in ((0, 25), (1, 60), (2, 25)):
    rank(r, g)

# One rank.  Host-bound: kernels are short, and a 40 µs gap on the host between
# opA and opB sets the step: the path stays on the host thread.
#   ProfilerStep#1 [0, 63): opA [1, 10) > launch [2, 4) -> k1 [5, 8)
#                           opB [50, 60) > launch [51, 53) -> k2 [54, 57)
#                           cudaDeviceSynchronize [61, 62) (nothing left to wait for)
# GPU-bound: k1 runs 75 µs; k2 queues behind it on the stream and the sync waits for k2.
#   ProfilerStep#1 [0, 87): opA [1, 10) > launch [2, 4) -> k1 [5, 80)
#                           opB [11, 20) > launch [12, 14) -> k2 [80, 85)
#                           cudaDeviceSynchronize [21, 86)
def single(path, host_bound):
    ev = []
    if host_bound:
        host(ev, 1, "user_annotation", "ProfilerStep#1", 0, 63)
        host(ev, 1, "cpu_op", "opA", 1, 9); host(ev, 1, "cuda_runtime", "cudaLaunchKernel", 2, 2, 1); gpu(ev, "k1", 5, 3, 1)
        host(ev, 1, "cpu_op", "opB", 50, 10); host(ev, 1, "cuda_runtime", "cudaLaunchKernel", 51, 2, 2); gpu(ev, "k2", 54, 3, 2)
        host(ev, 1, "cuda_runtime", "cudaDeviceSynchronize", 61, 1)
    else:
        host(ev, 1, "user_annotation", "ProfilerStep#1", 0, 87)
        host(ev, 1, "cpu_op", "opA", 1, 9); host(ev, 1, "cuda_runtime", "cudaLaunchKernel", 2, 2, 1); gpu(ev, "k1", 5, 75, 1)
        host(ev, 1, "cpu_op", "opB", 11, 9); host(ev, 1, "cuda_runtime", "cudaLaunchKernel", 12, 2, 2); gpu(ev, "k2", 80, 5, 2)
        host(ev, 1, "cuda_runtime", "cudaDeviceSynchronize", 21, 65)
    json.dump({"traceEvents": ev}, open(path, "w"))
single("hostbound.json", True)
single("gpubound.json", False)
PY

# tables of a csv: path, steps, slack (split at the blank lines)
split_csv() { awk -v p="$1" 'BEGIN { n = 1 } /^$/ { n++; next } { print > (p "." n) }' "$TMP/out"; }

# --- across ranks ---
expect_status 0 "$BIN/trace-ingest" -q -o cp.db c0.json c1.json c2.json
expect_status 0 "$BIN/trace-analyze" --report critical-path:top=20 --format csv cp.db
split_csv cp
expect_eq "$(cat cp.1)" "step,pos,rank,kind,start_ns,dur_ns,path_ns,wait_ns,slack_ns,type,name
1,1,1,range,0,72000,0,0,0,,ProfilerStep#1
1,2,1,op,1000,9000,0,1000,0,nested,aten::mm
1,3,1,runtime,2000,2000,2000,1000,0,nested,cudaLaunchKernel
1,4,1,kernel,5000,55000,55000,1000,0,launch,gemm
1,5,1,kernel,60000,10000,0,0,0,stream,ncclDevKernel_AllReduce_Sum_f32_RING_LL
1,6,0,kernel,25000,45000,10000,0,0,collective,ncclDevKernel_AllReduce_Sum_f32_RING_LL
1,7,0,runtime,21000,50000,1000,0,0,sync,cudaDeviceSynchronize
1,8,0,range,0,72000,1000,0,0,returns,ProfilerStep#1" "critical path across ranks"
expect_eq "$(cat cp.2)" "step,ranks,span_ns,path_from_ns,host_ns,gpu_ns,comm_ns,wait_ns,ops,end_rank,top_rank,top_rank_ns
1,3,72000,0,4000,55000,10000,3000,8,0,1,57000" "critical path: the step's row"
# the straggler's gemm is on the path; the other ranks' gemms have 35 µs of slack
expect_eq "$(grep ',gemm$' cp.3 | cut -d, -f2,6 | tr '\n' ' ')" "0,35000 2,35000 " "slack of the gemms off the path"
# ranks 0 and 2 end their step at the same time as rank 0: equally critical
expect_eq "$(awk -F, '$6 == 0' cp.3 | cut -d, -f2,3,7 | tr '\n' ' ')" \
    "2,range,ProfilerStep#1 1,runtime,cudaDeviceSynchronize 2,runtime,cudaDeviceSynchronize 2,kernel,ncclDevKernel_AllReduce_Sum_f32_RING_LL " \
    "critical path: the ties off the path"
# on the path and the waits cover the span: sum(path) + sum(wait) = span
expect_eq "$(awk -F, 'NR > 1 { s += $7 + $8 } END { print s }' cp.1)" "72000" "critical path: path + waits = span"

# --- one rank: a host-bound gap decides ---
expect_status 0 "$BIN/trace-analyze" --report critical-path --format csv hostbound.json
split_csv hb
expect_eq "$(cut -d, -f2,4,6-11 hb.1 | tail -n +2 | tr '\n' ' ')" \
    "1,range,63000,0,0,0,,ProfilerStep#1 2,op,9000,0,1000,0,nested,opA 3,runtime,2000,2000,1000,0,nested,cudaLaunchKernel 4,op,9000,6000,0,0,returns,opA 5,op,10000,0,40000,0,thread,opB 6,runtime,2000,2000,1000,0,nested,cudaLaunchKernel 7,op,10000,7000,0,0,returns,opB 8,runtime,1000,1000,1000,0,thread,cudaDeviceSynchronize 9,range,63000,1000,0,0,returns,ProfilerStep#1 " \
    "host-bound: the path stays on the host"
# k2 may end 4 µs later before the sync would wait for it; k1 49 (then k2 starts late)
expect_eq "$(tail -n +2 hb.3 | cut -d, -f3,6,7 | tr '\n' ' ')" "kernel,4000,k2 kernel,49000,k1 " "host-bound: the kernels' slack"
expect_eq "$(tail -n +2 hb.2)" "1,1,63000,0,19000,0,0,44000,9,0,0,19000" "host-bound: the step's row"

# --- one rank: a long kernel decides ---
expect_status 0 "$BIN/trace-analyze" --report critical-path --format csv gpubound.json
split_csv gb
expect_eq "$(cut -d, -f2,4,7,10,11 gb.1 | tail -n +2 | tr '\n' ' ')" \
    "1,range,0,,ProfilerStep#1 2,op,0,nested,opA 3,runtime,2000,nested,cudaLaunchKernel 4,kernel,75000,launch,k1 5,kernel,5000,stream,k2 6,runtime,1000,sync,cudaDeviceSynchronize 7,range,1000,returns,ProfilerStep#1 " \
    "gpu-bound: the path runs through the long kernel"
# opB could run until the sync would start after k2 ended: 64 µs; so could its launch
expect_eq "$(tail -n +2 gb.3 | cut -d, -f3,6,7 | tr '\n' ' ')" "op,64000,opB runtime,64000,cudaLaunchKernel " \
    "gpu-bound: slack off the path"

# --- formats, limits, no steps ---
expect_status 0 "$BIN/trace-analyze" --report critical-path cp.db
expect_grep '^Critical path$' "$TMP/out"
expect_grep '^Least slack off the path$' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --report critical-path:top=1 --format json cp.db
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["reports"][0]["tables"]; assert [x["title"] for x in t]==["Critical path","Steps","Least slack off the path"]; assert len(t[2]["rows"])==1; s=t[1]["rows"][0]; assert sum(r["path_ns"]+r["wait_ns"] for r in t[0]["rows"])==s["span_ns"]-s["path_from_ns"]' "$TMP/out" \
    || fail "critical path: json"
python3 -c 'import json; json.dump({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7}}]}, open("nosteps.json", "w"))'
expect_status 0 "$BIN/trace-analyze" --report critical-path nosteps.json
expect_grep 'no ProfilerStep#N' "$TMP/err"
expect_status 2 "$BIN/trace-analyze" --report critical-path:top=x cp.db
expect_one_line_error

# --- one run.db per rank gives the same path ---
for r in 0 1 2; do expect_status 0 "$BIN/trace-ingest" -q -o cp$r.db c$r.json; done
expect_status 0 "$BIN/trace-analyze" --report critical-path:top=20 --format csv cp0.db cp1.db cp2.db
split_csv many
expect_eq "$(cat many.1 many.2 many.3)" "$(cat cp.1 cp.2 cp.3)" "critical path: one run.db per rank"

# --- clocks that disagree: rank 1's runs 1 ms ahead; aligned by the collective's ends, the path is the same ---
python3 - <<'PY'
import json
d = json.load(open("c1.json"))
for e in d["traceEvents"]:
    e["ts"] += 1000
json.dump(d, open("c1skew.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o skew.db c0.json c1skew.json c2.json
expect_status 0 "$BIN/trace-analyze" --report critical-path:top=20 --format csv skew.db
split_csv skew
expect_eq "$(cat skew.1 skew.2 skew.3)" "$(cat cp.1 cp.2 cp.3)" "critical path: rank 1's clock 1 ms ahead"

# --- --rank 0,2: the path over those ranks; their all-reduce waits for no one left in the trace ---
expect_status 0 "$BIN/trace-analyze" --report critical-path --rank 0,2 --format csv cp.db
split_csv sel
expect_eq "$(tail -n +2 sel.1 | cut -d, -f3,7,10,11 | tr '\n' ' ')" \
    "0,0,,ProfilerStep#1 0,0,nested,aten::mm 0,2000,nested,cudaLaunchKernel 0,20000,launch,gemm 0,45000,stream,ncclDevKernel_AllReduce_Sum_f32_RING_LL 0,1000,sync,cudaDeviceSynchronize 0,1000,returns,ProfilerStep#1 " \
    "critical path --rank 0,2"
expect_no_grep '^1,[0-9]*,1,' sel.1

# --- a synthetic 4-rank job (gen-kineto -r) with a known straggler (rank 2 starts each step
# late) and clocks off by known offsets: every step's path starts on rank 2, and rank 2 holds
# the most time on it, read from one run.db per rank ---
G="$BIN/gen-kineto"
if [ -x "$G" ]; then
    expect_status 0 "$G" -r 4 -n 20000 -s 3 -S 2 -o job
    expect_grep '^straggler 2$' "$TMP/out"
    for r in 0 1 2 3; do expect_status 0 "$BIN/trace-ingest" -q -o job$r.db job$r.json; done
    expect_status 0 "$BIN/trace-analyze" --report critical-path:top=0:all=1 --format csv -n -1 job0.db job1.db job2.db job3.db
    split_csv job
    steps=$(tail -n +2 job.2 | wc -l)
    [ "$steps" -ge 5 ] || fail "critical path: only $steps steps in the synthetic job"
    expect_eq "$(awk -F, '$2 == 1 { print $3 }' job.1 | sort -u)" "2" "critical path: the path starts on the straggler"
    expect_eq "$(tail -n +2 job.2 | cut -d, -f11 | sort -u)" "2" "critical path: the straggler holds the most time on it"
    python3 - job.1 job.2 <<'PY' || fail "critical path: path + waits do not cover the step in the synthetic job"
import csv, sys
# the rows cover the step from where the chain begins to its end
tot = {}
for r in csv.DictReader(open(sys.argv[1])):
    tot[r["step"]] = tot.get(r["step"], 0) + int(r["path_ns"]) + int(r["wait_ns"])
for r in csv.DictReader(open(sys.argv[2])):
    assert tot[r["step"]] == int(r["span_ns"]) - int(r["path_from_ns"]), (r["step"], tot[r["step"]], r["span_ns"])
    assert int(r["ranks"]) == 4
PY
    # by default, the path of the slowest step alone
    expect_status 0 "$BIN/trace-analyze" --report critical-path:top=0 --format csv -n -1 job0.db job1.db job2.db job3.db
    split_csv one
    slowest=$(tail -n +2 one.2 | sort -t, -k3,3n | tail -1 | cut -d, -f1)
    expect_eq "$(tail -n +2 one.1 | cut -d, -f1 | sort -u)" "$slowest" "critical path: the slowest step's path by default"
    expect_eq "$(grep -c "^$slowest," one.1)" "$(grep -c "^$slowest," job.1)" "critical path: the same path as with all=1"
    expect_status 0 "$BIN/trace-analyze" --report critical-path job0.db job1.db job2.db job3.db
    expect_grep "the path of ProfilerStep#$slowest, the slowest of $steps steps" "$TMP/out"
else
    skip "gen-kineto not built"
fi
