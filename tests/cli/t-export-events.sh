# trace-export --events: every event once, stable columns, valid JSON Lines and CSV,
# sums equal to the run.db's own.
sample="$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
expect_status 0 "$BIN/trace-ingest" -q -o s.db "$sample"
expect_status 0 "$BIN/trace-export" --events -o ev.jsonl s.db
expect_status 0 "$BIN/trace-export" --events --format csv -o ev.csv s.db
expect_eq "$(wc -l < ev.jsonl | tr -d ' ')" "$(q s.db 'select count(*) from events')" "one line per event"
expect_eq "$(head -1 ev.csv)" \
    "id,kind,name,start_ns,end_ns,dur_ns,rank,source,pid,tid,device,stream,correlation,parent_id,depth,shape,seq,bytes,flags,cpu_self_ns,gpu_self_ns,gpu_total_ns,cpu_mem_self,gpu_mem_self" \
    "csv header: the documented columns, in order"
if command -v python3 >/dev/null; then
    got=$(python3 -c 'import json, sys, csv
rows = [json.loads(l) for l in open("ev.jsonl")]
k = sum(r["dur_ns"] for r in rows if r["kind"] == "kernel")
c = list(csv.DictReader(open("ev.csv")))
assert len(c) == len(rows)
assert all(r["pid"] is None for r in rows if r["kind"] == "kernel")
print(k, sum(int(r["dur_ns"]) for r in c if r["kind"] == "kernel"))')
    want=$(q s.db "select sum(end_ns - start_ns) from events where kind = 7")
    expect_eq "$got" "$want $want" "kernel time in JSON Lines and CSV"
fi
# a name with a comma, a quote and a newline stays one CSV field
printf '{"traceEvents":[{"name":"a,\\"b\\"\\nc","ph":"X","cat":"cpu_op","ts":1,"dur":5,"pid":1,"tid":1}]}' > odd.json
expect_status 0 "$BIN/trace-ingest" -q -o odd.db odd.json
expect_status 0 "$BIN/trace-export" --events --format csv -o odd.csv odd.db
if command -v python3 >/dev/null; then
    expect_eq "$(python3 -c 'import csv; print(repr(list(csv.DictReader(open("odd.csv")))[0]["name"]))')" \
        "'a,\"b\"\\nc'" "csv quoting"
fi
expect_status 2 "$BIN/trace-export" --events --format xml s.db
expect_status 2 "$BIN/trace-export" --events --chrome s.db
