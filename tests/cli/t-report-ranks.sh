# trace-analyze --report ranks: per-rank step time and GPU breakdown, and the
# spread of each step across ranks, on hand-made Kineto traces whose answers
# are known by construction (times in µs).
#
# Rank r (r = 0, 1, 2), one file each:
#   ProfilerStep#1 [0, L1[r])      L1 = 100, 150, 110
#   ProfilerStep#2 [200, 200+L2[r]) L2 = 90, 90, 120
#   step 1: gemm [10, 40+10r), all-reduce [30, 60): computation 30+10r, comm 30, exposed comm 20-10r
#   step 2: gemm [210, 220), all-reduce [230, 240): computation 10, comm 10, exposed 10, idle 10
#   a kernel at [0, 5) whose launch is not in the trace (left out, as gpu-time does)
python3 - <<'PY'
import json
L1 = {0: 100, 1: 150, 2: 110}
L2 = {0: 90, 1: 90, 2: 120}
def write(r, path, with_rank=True, with_steps=True):
    ev = []
    def host(cat, name, ts, dur, corr=None):
        e = {"ph": "X", "cat": cat, "name": name, "pid": 10 + r, "tid": 10 + r, "ts": ts, "dur": dur}
        if corr is not None:
            e["args"] = {"correlation": corr}
        ev.append(e)
    def gpu(name, ts, dur, corr):
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
    if with_steps:
        host("user_annotation", "ProfilerStep#1", 0, L1[r])
        host("user_annotation", "ProfilerStep#2", 200, L2[r])
    host("cuda_runtime", "cudaLaunchKernel", 1, 1, 1); gpu("gemm", 10, 30 + 10 * r, 1)
    host("cuda_runtime", "cudaLaunchKernel", 3, 1, 2); gpu("ncclDevKernel_AllReduce_Sum_f32", 30, 30, 2)
    host("cuda_runtime", "cudaLaunchKernel", 201, 1, 3); gpu("gemm", 210, 10, 3)
    host("cuda_runtime", "cudaLaunchKernel", 203, 1, 4); gpu("ncclDevKernel_AllReduce_Sum_f32", 230, 10, 4)
    gpu("early", 0, 5, 99)
    doc = {"traceEvents": ev}
    if with_rank:
        doc["distributedInfo"] = {"backend": "nccl", "rank": r, "world_size": 3}
    json.dump(doc, open(path, "w"))
for r in range(3):
    write(r, "r%d.json" % r)
    write(r, "n%d.json" % r, with_rank=False)
    write(r, "s%d.json" % r, with_steps=False)
PY

# the files in another order than their ranks: rows come by rank
expect_status 0 "$BIN/trace-ingest" -q -o all.db r2.json r0.json r1.json
expect_status 0 "$BIN/trace-analyze" --report ranks --format csv all.db
cp "$TMP/out" ranks.csv
expect_eq "$(sed -n 1p ranks.csv)" \
    "rank,steps,step_mean_ns,step_total_ns,gpu_span_ns,busy_ns,busy_pct,computation_ns,communication_ns,exposed_comm_ns,exposed_memcpy_ns,idle_ns,slowest_steps,name" \
    "ranks: header"
expect_eq "$(sed -n 2,4p ranks.csv | tr '\n' ' ')" \
    "0,2,95000,190000,80000,70000,87.5,40000,40000,30000,0,10000,0,r0.json 1,2,120000,240000,80000,70000,87.5,50000,40000,20000,0,10000,1,r1.json 2,2,115000,230000,80000,70000,87.5,60000,40000,10000,0,10000,1,r2.json " \
    "ranks: per-rank rows"
# step 1: 100 (rank 0), 110, 150 (rank 1); step 2: 90 (rank 0), 90, 120 (rank 2)
expect_eq "$(sed -n '/^step,/,$p' ranks.csv | tr '\n' ' ')" \
    "step,ranks,min_ns,median_ns,max_ns,spread_ns,spread_pct,fastest_rank,slowest_rank 1,3,100000,110000,150000,50000,33.3333333333333,0,1 2,3,90000,90000,120000,30000,25,0,2 " \
    "ranks: per-step spread"
# every row: computation + exposed comm + exposed memcpy + idle = GPU span
awk -F, 'NR > 1 && NR <= 4 && $8 + $10 + $11 + $12 != $5 { bad = 1 } END { exit bad }' ranks.csv \
    || fail "ranks: the breakdown does not add up to the GPU span"

# the text format: both tables and the largest spread
expect_status 0 "$BIN/trace-analyze" --report ranks all.db
expect_grep '^Ranks$' "$TMP/out"
expect_grep '^Steps across ranks$' "$TMP/out"
expect_grep 'largest spread: ProfilerStep#1, 50.000us' "$TMP/out"
expect_grep 'excluded: 3 GPU activities' "$TMP/out"

# --step 2: only that step, on every rank
expect_status 0 "$BIN/trace-analyze" --report ranks --step 2 --format csv all.db
expect_eq "$(sed -n 2,4p "$TMP/out" | cut -d, -f1-6,8,10,12 | tr '\n' ' ')" \
    "0,1,90000,90000,30000,20000,10000,10000,10000 1,1,90000,90000,30000,20000,10000,10000,10000 2,1,120000,120000,30000,20000,10000,10000,10000 " \
    "ranks --step 2"

# sources without distributedInfo: ranks by their order among the sources
expect_status 0 "$BIN/trace-ingest" -q -o order.db n1.json n0.json n2.json
expect_status 0 "$BIN/trace-analyze" --report ranks --format csv order.db
expect_eq "$(sed -n 2,4p "$TMP/out" | cut -d, -f1,4,14 | tr '\n' ' ')" \
    "0,240000,n1.json 1,190000,n0.json 2,230000,n2.json " "ranks: rank from the file order"

# no ProfilerStep#N: the step is the rank's whole span (first host or GPU start to last end)
expect_status 0 "$BIN/trace-ingest" -q -o nosteps.db s0.json s1.json
expect_status 0 "$BIN/trace-analyze" --report ranks --format csv nosteps.db
expect_eq "$(sed -n 2,3p "$TMP/out" | cut -d, -f1-4 | tr '\n' ' ')" \
    "0,0,240000,240000 1,0,240000,240000 " "ranks: no steps"
expect_no_grep '^step,' "$TMP/out"

# json: one report, two tables
expect_status 0 "$BIN/trace-analyze" --report ranks --format json all.db
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["reports"][0]["tables"]; assert [x["title"] for x in t]==["Ranks","Steps across ranks"], t; assert t[0]["rows"][1]["slowest_steps"]==1' "$TMP/out" \
    || fail "ranks: json"

# one run.db per rank: the same rows as one run.db holding them all
for r in 0 1 2; do expect_status 0 "$BIN/trace-ingest" -q -o r$r.db r$r.json; done
expect_status 0 "$BIN/trace-analyze" --report ranks --format csv r2.db r0.db r1.db
expect_eq "$(cat "$TMP/out")" "$(cat ranks.csv)" "ranks: one run.db per rank"

# --rank 0,2: those rows, and the spread over those ranks alone
expect_status 0 "$BIN/trace-analyze" --report ranks --rank 0,2 --format csv all.db
expect_eq "$(sed '/^$/q' "$TMP/out" | cut -d, -f1,4,8,13 | tr '\n' ' ')" \
    "rank,step_total_ns,computation_ns,slowest_steps 0,190000,40000,0 2,230000,60000,2  " "ranks --rank 0,2"
expect_eq "$(sed -n '/^step,/,$p' "$TMP/out" | cut -d, -f1-5,9 | tr '\n' ' ')" \
    "step,ranks,min_ns,median_ns,max_ns,slowest_rank 1,2,100000,105000,110000,2 2,2,90000,105000,120000,2 " \
    "ranks --rank 0,2: the spread over those ranks"

# a rank with steps and one without: the latter's whole span, and no row of it under --step
expect_status 0 "$BIN/trace-ingest" -q -o mixed.db r0.json s1.json
expect_status 0 "$BIN/trace-analyze" --report ranks --format csv mixed.db
expect_eq "$(sed '/^$/q' "$TMP/out" | cut -d, -f1-4 | tr '\n' ' ')" \
    "rank,steps,step_mean_ns,step_total_ns 0,2,95000,190000 1,0,240000,240000  " "ranks: a rank without steps"
expect_status 0 "$BIN/trace-analyze" --report ranks --step 1 --format csv mixed.db
expect_eq "$(sed '/^$/q' "$TMP/out" | cut -d, -f1-4 | tr '\n' ' ')" \
    "rank,steps,step_mean_ns,step_total_ns 0,1,100000,100000  " "ranks --step: no row for a rank without steps"
