# trace-analyze a.db b.db c.db: per-file summaries merged give the table of one
# run.db ingested from all the files, byte for byte, in every grouping and format.

A="$BIN/trace-analyze"
# kineto OUT STEP KDUR OPNAME: one step of mm+add; OPNAME a per-file op
kineto() {
    python3 - "$@" <<'PY'
import json, sys
out, step, kdur, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ev, t, corr = [], 1, 100
def op(name, dur, kernel=None, kd=0, dims=None):
    global t, corr
    e = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": t, "dur": dur}
    if dims:
        e["args"] = {"Input Dims": dims}
    ev.append(e)
    if kernel:
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t + 1, "dur": 2, "args": {"correlation": corr, "cbid": 211}})
        ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 4,
                   "dur": kd, "args": {"device": 0, "stream": 7, "correlation": corr}})
    t += dur + 40
ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": 1, "tid": 1,
           "ts": 0, "dur": 1000})
for i in range(3):
    op("aten::mm", 10 + i, "gemm", kdur + i, [[2, 3 + step], [3, 4]])
    op("aten::add", 8, "add_kernel", 5)
op(extra, 6)
json.dump({"schemaVersion": 1, "traceEvents": ev}, open(out, "w"))
PY
}
kineto a.json 1 20 aten::a && kineto b.json 2 31 aten::b && kineto c.json 3 7 aten::a \
    || { fail "cannot write the traces"; return 0; }
for f in a b c; do "$BIN/trace-ingest" -q -o $f.db $f.json || fail "cannot ingest $f.json"; done
"$BIN/trace-ingest" -q -o all.db a.json b.json c.json || fail "cannot ingest all three"

# same OPTIONS...: the merged table and the one-run.db table are the same bytes
same() {
    "$A" -n -1 "$@" all.db >one.out 2>one.err; r1=$?
    "$A" -n -1 "$@" a.db b.db c.db >many.out 2>many.err; r2=$?
    expect_eq "$r2" "$r1" "exit status with $*"
    cmp -s one.out many.out || { fail "merged table differs with '$*'"; diff one.out many.out | head -6 >&2; }
}
for opts in "" "--stats" "--group-by-shape" "--group-by-stack 2" "--group-by-stack 3 --stats" "-s count" \
            "-s none" "--format csv --stats" "--format json" "--format markdown" "--kind kernel"; do
    same $opts
done
# docs/scale-out.md's recipe, as written there, gives the same table
mkdir -p traces dbs && cp a.json traces/rank0.pt.trace.json && cp b.json traces/rank1.pt.trace.json \
    && cp c.json traces/rank2.pt.trace.json || fail "cannot lay out the traces"
PATH="$BIN:$PATH" sh -c 'printf "%s\n" traces/rank*.pt.trace.json |
    xargs -P 2 -n 1 sh -c '"'"'trace-ingest -q -o "dbs/$(basename "$1" .pt.trace.json).db" "$1"'"'"' sh' \
    || fail "the xargs recipe failed"
"$A" -n -1 dbs/rank*.db >recipe.out 2>&1 && "$A" -n -1 all.db >one.out 2>&1
cmp -s recipe.out one.out || fail "the xargs recipe's table differs from one run.db's"

# the merge is real: the counts are the three files' sums, the median of all durations
"$A" --format csv --stats -n -1 a.db b.db c.db >m.csv || fail "merged csv"
python3 - m.csv <<'PY' || fail "merged numbers"
import csv, sys
rows = {(r["name"], r["device"]): r for r in csv.DictReader(open(sys.argv[1]))}
g = rows[("gemm", "gpu")]
assert g["calls"] == "9", g["calls"]
assert g["self_gpu_ns"] == str(1000 * (20 + 21 + 22 + 31 + 32 + 33 + 7 + 8 + 9)), g["self_gpu_ns"]
assert (g["min_ns"], g["max_ns"], g["median_ns"]) == ("7000", "33000", "21000"), g
assert rows[("aten::a", "cpu")]["calls"] == "2" and rows[("aten::b", "cpu")]["calls"] == "1"
PY

# an 8-rank data-parallel job (gen-kineto -r 8: collectives, a straggler, skewed clocks):
# each rank's run.db made in parallel, then analysed together, gives the table of one
# run.db of all eight, for every grouping; the counts and sums are exact
if [ -x "$BIN/gen-kineto" ]; then
    mkdir -p job && "$BIN/gen-kineto" -r 8 -n 3000 -o job/r >/dev/null || fail "gen-kineto -r 8"
    printf '%s\n' job/r*.json | xargs -P 2 -n 1 sh -c '"$0" -q -o "${1%.json}.db" "$1"' "$BIN/trace-ingest" \
        || fail "per-rank ingest"
    expect_status 0 "$BIN/trace-ingest" -q -o job8.db job/r0.json job/r1.json job/r2.json job/r3.json \
        job/r4.json job/r5.json job/r6.json job/r7.json
    for opts in "" "--stats" "--group-by-shape" "--group-by-stack 3" "--kind kernel --format csv" "--rank 2-5"; do
        "$A" -n -1 $opts job8.db >j1.out 2>j1.err
        "$A" -n -1 $opts job/r0.db job/r1.db job/r2.db job/r3.db job/r4.db job/r5.db job/r6.db job/r7.db \
            >j8.out 2>j8.err
        cmp -s j1.out j8.out || { fail "8 ranks: the merged table differs with '$opts'"; diff j1.out j8.out | head -6 >&2; }
    done
    expect_eq "$(q job8.db 'SELECT count(DISTINCT rank) FROM sources')" 8 "8 ranks in one run.db"
fi

# on real traces, when present
if [ -n "$TRACES" ]; then
    set -- HTA__triton_example.json.gz HTA__call_stack_backward_thread.json TraceLens__h100_gaunernst_bert-small-uncased.json.gz
    i=0
    for f in "$@"; do
        i=$((i + 1))
        "$BIN/trace-ingest" -q -o r$i.db "$TRACES/kineto/$f" || fail "cannot ingest $f"
    done
    "$BIN/trace-ingest" -q -o rall.db "$TRACES/kineto/$1" "$TRACES/kineto/$2" "$TRACES/kineto/$3" \
        || fail "cannot ingest the three real traces together"
    for opts in "" "--stats" "--group-by-shape" "--group-by-stack 3" "--format json"; do
        # (two of the traces claim rank 0: the many-run.db table warns, docs/diff.md, Ranks)
        "$A" -n -1 $opts rall.db >one.out 2>one.err
        "$A" -n -1 $opts r1.db r2.db r3.db >many.out 2>many.err
        cmp -s one.out many.out || { fail "real traces: merged table differs with '$opts'"; diff one.out many.out | head -6 >&2; }
    done
fi

# the same file twice counts twice, with a warning
expect_status 0 "$A" --format csv a.db ./a.db
expect_one_line_error
expect_grep 'a.db is a.db again' "$TMP/err"
expect_grep '^gemm,gpu,.*,6$' "$TMP/out"

# bad input among many: the whole run fails with the file named
echo 'not a database' >text.db
expect_status 3 "$A" a.db text.db c.db
expect_one_line_error
expect_grep 'text.db' "$TMP/err"
expect_status 3 "$A" --report summary a.db text.db
expect_one_line_error
expect_grep 'text.db' "$TMP/err"
expect_status 2 "$A" --report summary --diff a.db b.db
