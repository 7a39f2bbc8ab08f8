# GPU activities without a launching call (no correlation in the source, a correlation
# no call has, or a launch before the capture began) keep their time in the host rows:
# the row "[no launching call]", and a footer line that counts them with the reason.

python3 - <<'PY'
import json
ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 11, "ts": 100, "dur": 50}]
def kernel(name, ts, dur, corr):
    args = {"device": 0, "stream": 7}
    if corr is not None:
        args["correlation"] = corr
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": args})
# launched in the window: correlations 100 and 101
for i, corr in enumerate((100, 101)):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 11,
               "ts": 110 + 10 * i, "dur": 5, "args": {"correlation": corr}})
    kernel("k_launched", 200 + 20 * i, 10, corr)
kernel("k_before", 0, 30, 7)          # launched before the capture: below every call's correlation
kernel("k_before", 40, 30, 8)
kernel("k_lost", 300, 5, 150)         # a correlation no call has
kernel("k_nocorr", 320, 7, None)      # no correlation at all
json.dump({"traceEvents": ev}, open("u.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o u.db u.json
expect_eq "$(q u.db "SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.on_gpu AND e.parent_id IS NULL")" 4 \
    "kernels without a parent in run.db (test premise)"

expect_status 0 "$BIN/trace-analyze" --format json u.db
python3 - "$TMP/out" <<'PY' || fail "json: the [no launching call] row and counts"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {(r["name"], r["device"]): r for r in d["rows"]}
row = rows[("[no launching call]", "cpu")]
assert row["self_gpu_ns"] == 72000 and row["gpu_total_ns"] == 72000 and row["calls"] == 4, row
assert row["self_cpu_ns"] == 0
host = sum(r["self_gpu_ns"] for r in d["rows"] if r["device"] == "cpu")
dev = sum(r["self_gpu_ns"] for r in d["rows"] if r["device"] == "gpu")
assert host == dev == 92000, (host, dev)
assert d["no_launching_call"] == {"activities": 4, "gpu_ns": 72000, "no_correlation": 1,
                                  "before_capture": 2, "correlation_not_found": 1}, d["no_launching_call"]
# the device rows are unchanged: every kernel under its own name
assert rows[("k_before", "gpu")]["self_gpu_ns"] == 60000
PY

expect_status 0 "$BIN/trace-analyze" u.db
expect_grep '^ *\[no launching call\]  ' "$TMP/out"
expect_grep '^4 GPU activities (72.000us) have no launching call (row \[no launching call\]): 1 no correlation in the source, 2 launched before the capture window, 1 correlation not found$' "$TMP/out"

# selections count what they select
expect_status 0 "$BIN/trace-analyze" --include 'k_before' u.db
expect_grep '^2 GPU activities (60.000us) have no launching call (row \[no launching call\]): 2 launched before the capture window$' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --include 'k_launched|aten' u.db
expect_no_grep 'no launching call' "$TMP/out"

# --compat torch keeps PyTorch's table: no such row, no footer line
expect_status 0 "$BIN/trace-analyze" --compat torch u.db
expect_no_grep 'no launching call' "$TMP/out"

# several run.dbs: the counts add up
cp u.db u2.db
expect_status 0 "$BIN/trace-analyze" u.db u2.db
expect_grep '^8 GPU activities (144.000us) have no launching call' "$TMP/out"

# a trace given directly gets the same
expect_status 0 "$BIN/trace-analyze" u.json
expect_grep '^4 GPU activities (72.000us) have no launching call' "$TMP/out"

# ingest stores the counts in meta, by reason, for the ingest summary and the reports
expect_eq "$(q u.db "SELECT key || '=' || value FROM meta WHERE key LIKE 'gpu_unlaunched_%' ORDER BY key" | tr '\n' ' ')" \
    "gpu_unlaunched_before_capture=2 gpu_unlaunched_no_correlation=1 gpu_unlaunched_not_found=1 " "meta counts"

# a table of device kinds only has no host rows, so no such row; the line still counts them
expect_status 0 "$BIN/trace-analyze" --kind kernel u.db
expect_no_grep '^ *\[no launching call\]  ' "$TMP/out"
expect_grep '^4 GPU activities (72.000us) have no launching call: 1 no correlation' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --kind kernel,op u.db
expect_grep '^ *\[no launching call\]  ' "$TMP/out"

# and their total, 0 included: a table from the aggregates looks for them only where
# the ingest counted some (an earlier run.db, without the key, is looked at)
expect_eq "$(q u.db "SELECT value FROM meta WHERE key = 'gpu_unlaunched'")" 4 "meta total"
expect_status 0 env TR_AGGREGATES_MIN=0 "$BIN/trace-analyze" u.db
expect_grep '^ *\[no launching call\]  ' "$TMP/out"
expect_grep '^4 GPU activities (72.000us) have no launching call' "$TMP/out"
cp "$TMP/out" agg.out
cp u.db older.db
q older.db "DELETE FROM meta WHERE key = 'gpu_unlaunched'"
expect_status 0 env TR_AGGREGATES_MIN=0 "$BIN/trace-analyze" older.db
cmp -s agg.out "$TMP/out" || fail "a run.db without the total gives another table"
# the count is trusted as the aggregates are: a run.db that says none shows none
q older.db "INSERT INTO meta(key, value) VALUES ('gpu_unlaunched', '0')"
expect_status 0 env TR_AGGREGATES_MIN=0 "$BIN/trace-analyze" older.db
expect_no_grep 'no launching call' "$TMP/out"
"$BIN/gen-nvprof" -n 2000 -o gen.nvvp >/dev/null || fail "gen-nvprof"
expect_status 0 "$BIN/trace-ingest" -q -o gen.db gen.nvvp
expect_eq "$(q gen.db "SELECT value FROM meta WHERE key = 'gpu_unlaunched'")" 0 "meta total of a run without any"
