# trace-analyze options as a user would try them: totals are preserved under every
# grouping, sort and format; filters select what they say; bad options exit 2.
root=$(cd "$GOLDEN_DIR/../../.." && pwd)
"$BIN/trace-ingest" -q -o s.db "$root/sample-traces/lm-step.nvvp" || fail "ingest sample"

# totals of a JSON summary: events, self CPU, sum of calls, device self GPU, host self GPU
totals() {
    python3 -c '
import json, sys
d = json.load(sys.stdin)
rows = d["rows"]
dev = sum(r.get("self_gpu_ns", 0) for r in rows if r["device"] == "gpu")
host = sum(r.get("self_gpu_ns", 0) for r in rows if r["device"] == "cpu")
print(d["events"], d["self_cpu_total_ns"], sum(r["calls"] for r in rows),
      sum(r["self_cpu_ns"] for r in rows), dev, host, d["self_gpu_total_ns"])'
}
want="$(q s.db 'SELECT count(*), sum(cpu_self_ns), count(*), sum(cpu_self_ns) FROM events' | tr '|' ' ') \
$(q s.db 'SELECT sum(gpu_self_ns) FROM events WHERE kind IN (7,8,9)') \
$(q s.db 'SELECT sum(gpu_self_ns) FROM events WHERE kind NOT IN (7,8,9)') \
$(q s.db 'SELECT sum(gpu_self_ns) FROM events WHERE kind IN (7,8,9)')"
for group in "" "--group-by-shape" "--group-by-stack 1" "--group-by-stack 3" \
             "--group-by-stack 2 --group-by-shape" "--group-by-stack 50"; do
    for sort in self_cpu cuda_time_total count none flops; do
        # shellcheck disable=SC2086
        got=$("$BIN/trace-analyze" --format json -n -1 --sort $sort $group s.db | totals) || fail "json $group $sort"
        expect_eq "$got" "$want" "totals with '$group' --sort $sort"
    done
done
# more groups with finer keys, never fewer
n_name=$("$BIN/trace-analyze" --format csv -n -1 s.db | wc -l)
n_stack=$("$BIN/trace-analyze" --format csv -n -1 --group-by-stack 3 s.db | wc -l)
[ "$n_stack" -ge "$n_name" ] || fail "stack grouping has fewer rows ($n_stack) than name grouping ($n_name)"

# stack grouping without recorded frames uses the range ancestry, shown as Source Location
expect_status 0 "$BIN/trace-analyze" --group-by-stack 2 --sort count -n 40 s.db
expect_grep 'Source Location' "$TMP/out"
grep -q 'aten::addmm .*aten::linear' "$TMP/out" || fail "addmm should show its parent aten::linear as its frame"
expect_status 0 "$BIN/trace-analyze" --format json --group-by-stack 2 -n -1 s.db
expect_grep '"stack_source":"tree"' "$TMP/out"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
r=[r for r in d["rows"] if r["name"]=="aten::addmm"]
assert r and r[0]["stack"]==["aten::linear","train_step"], r' "$TMP/out" || fail "addmm stack frames"

# --top-level: host events without a parent, and every device activity
expect_status 0 "$BIN/trace-analyze" --top-level --format json -n -1 s.db
expect_eq "$(python3 -c 'import json,sys; print(sum(r["calls"] for r in json.load(open(sys.argv[1]))["rows"]))' "$TMP/out")" \
    "$(q s.db 'SELECT count(*) FROM events WHERE parent_id IS NULL OR kind IN (7,8,9)')" "top-level calls"
expect_status 0 "$BIN/trace-analyze" --top-level -n 3 s.db
expect_grep 'This report only display top-level ops statistics' "$TMP/out"

# --kind, --include, --exclude
expect_status 0 "$BIN/trace-analyze" --kind kernels --format json -n -1 s.db
expect_eq "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["self_gpu_ns"] for r in d["rows"]), len({r["device"] for r in d["rows"]}))' "$TMP/out")" \
    "$(q s.db 'SELECT sum(gpu_self_ns) FROM events WHERE kind = 7') 1" "kernel rows only"
expect_status 0 "$BIN/trace-analyze" --kind api,sync --format csv -n -1 s.db
expect_eq "$(tail -n +2 "$TMP/out" | cut -d, -f1 | sort | tr '\n' ' ')" \
    "[sync] stream synchronize cuLaunchKernel cudaLaunchKernel cudaMemcpyAsync cudaMemsetAsync cudaStreamSynchronize " "api,sync rows"
expect_status 0 "$BIN/trace-analyze" --include '^aten::' --exclude 'add' --format csv -n -1 s.db
expect_eq "$(tail -n +2 "$TMP/out" | cut -d, -f1 | sort | tr '\n' ' ')" \
    "aten::embedding aten::linear aten::mul aten::relu aten::sum " "include/exclude"
expect_status 2 "$BIN/trace-analyze" --include 'a(b' s.db
expect_one_line_error
expect_grep 'offset 3' "$TMP/err"
expect_status 2 "$BIN/trace-analyze" --kind nosuch s.db
expect_grep 'kernels' "$TMP/err"

# --thread, --device, --stream, --time-range
expect_status 0 "$BIN/trace-analyze" --thread 1001 --format json -n -1 s.db
expect_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$TMP/out")" \
    "$(q s.db 'SELECT count(*) FROM events e LEFT JOIN events a ON a.id = e.parent_id AND e.thread_id IS NULL
               JOIN threads t ON t.id = coalesce(e.thread_id, a.thread_id) WHERE t.tid = 1001')" "thread 1001"
expect_status 0 "$BIN/trace-analyze" --stream 13 --format json -n -1 s.db
expect_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$TMP/out")" \
    "$(q s.db 'SELECT count(*) FROM events e JOIN streams s ON s.id = e.stream_id WHERE s.stream = 13 AND e.kind IN (7,8,9)')" "stream 13"
expect_status 0 "$BIN/trace-analyze" --device 0 --format json -n -1 s.db
expect_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$TMP/out")" \
    "$(q s.db 'SELECT count(*) FROM events WHERE kind IN (7,8,9)')" "device 0"
expect_status 0 "$BIN/trace-analyze" --time-range 1ms:2.5ms --format json -n -1 s.db
expect_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"])' "$TMP/out")" \
    "$(q s.db 'SELECT count(*) FROM events, (SELECT min(start_ns) AS t0 FROM events)
               WHERE start_ns - t0 >= 1000000 AND start_ns - t0 < 2500000')" "time range"
expect_status 2 "$BIN/trace-analyze" --time-range 5ms:1ms s.db
expect_status 2 "$BIN/trace-analyze" --time-range abc s.db

# --stats: min, max, median, std dev of the durations of each group
expect_status 0 "$BIN/trace-analyze" --stats --format json -n -1 --include '^aten::relu$' s.db
expect_eq "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["rows"][0]; print(r["min_ns"], r["max_ns"])' "$TMP/out")" \
    "$(q s.db "SELECT min(end_ns-start_ns), max(end_ns-start_ns) FROM events e JOIN strings s ON s.id=e.name_id WHERE s.value='aten::relu'" | tr '|' ' ')" "stats min/max"
expect_status 0 "$BIN/trace-analyze" --stats -n 3 s.db
expect_grep 'Std Dev' "$TMP/out"

# formats: csv carries raw ns, markdown is a table
expect_status 0 "$BIN/trace-analyze" --format csv --sort count -n 2 s.db
expect_eq "$(head -1 "$TMP/out" | cut -d, -f1-4)" "name,device,self_cpu_pct,self_cpu_ns" "csv header"
expect_status 0 "$BIN/trace-analyze" --format markdown -n 2 s.db
expect_eq "$(sed -n 2p "$TMP/out" | cut -c1-10)" "|:---|---:" "markdown alignment row"
expect_status 2 "$BIN/trace-analyze" --format xml s.db
expect_grep 'markdown' "$TMP/err"
expect_status 0 "$BIN/trace-analyze" --units ms -n 1 s.db
expect_grep 'ms ' "$TMP/out"

# a Kineto trace with recorded shapes and Python stacks
if [ -n "$TRACES" ]; then
    "$BIN/trace-ingest" -q -o k.db "$TRACES/kineto/TraceLens__h100_gaunernst_bert-small-uncased.json.gz" || fail "ingest bert"
    expect_status 0 "$BIN/trace-analyze" --group-by-stack 5 --format json -n -1 k.db
    expect_grep '"stack_source":"frames"' "$TMP/out"
    expect_eq "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["calls"] for r in d["rows"]) == d["events"], any(len(r["stack"]) == 5 for r in d["rows"]))' "$TMP/out")" "True True" "bert stacks"
    expect_status 0 "$BIN/trace-analyze" --group-by-shape --kind ops -n 5 k.db
    expect_grep 'Input Shapes' "$TMP/out"
fi

# Where we differ from PyTorch on purpose (docs/semantics.md): a 52-character name fits
# the 55-wide column and is printed whole (PyTorch appends "..." anyway); longer names are cut.
name52=$(printf 'n%.0s' $(seq 52))
name60=$(printf 'm%.0s' $(seq 60))
q s.db "UPDATE strings SET value = '$name52' WHERE value = 'aten::relu';
        UPDATE strings SET value = '$name60' WHERE value = 'aten::mul'"
expect_status 0 "$BIN/trace-analyze" -n -1 s.db
grep -q "^ *$name52  " "$TMP/out" || fail "52-character name not printed whole"
grep -q "^$(printf 'm%.0s' $(seq 52))\.\.\.  " "$TMP/out" || fail "60-character name not cut to 52 + '...'"
