# --max-memory: past the limit, the ingest's large arrays live in spill files
# (lib/spill.h).  TR_SPILL_MIN_BYTES=0 makes every array, however small, a
# large one, and a small limit leaves little heap budget: every reader, the
# tree and the write then run on spilled arrays, with the trimmer dropping
# their pages, and the run database must be the same, row for row, as an
# ingest held in memory.
I="$BIN/trace-ingest"
root=$(cd "$GOLDEN_DIR/../../.." && pwd)
inputs="$root/sample-traces/lm-step.nvvp"
for f in "$root"/sample-traces/*.ctr "$root"/sample-traces/*.json*; do
    [ -f "$f" ] && inputs="$inputs $f"
done
if [ -n "$TRACES" ]; then
    for f in "$TRACES"/kineto/TraceLens__h100_gaunernst_bert-small-uncased.json.gz \
             "$TRACES"/kineto/HTA__call_stack_backward_thread.json \
             "$TRACES"/kineto/HTA__critical_path_alexnet_trace.json.gz \
             "$TRACES"/nsys/cuda-perf-sandbox__report1.sqlite \
             "$TRACES"/nvprof/blinkplus-nccl-base__output.nvvp \
             "$TRACES"/nvprof/profiling-lm__net-17ed9e2.sql; do
        [ -f "$f" ] && inputs="$inputs $f"
    done
fi
mkdir -p spill
k=0
for f in $inputs; do
    k=$((k + 1))
    expect_status 0 "$I" -q -o "mem$k.db" "$f"
    sqlite3 "mem$k.db" .dump > mem.sql
    # 1M: arrays are made in files; 8M: they start on the heap and move
    for limit in 1M 8M; do
        TR_SPILL_MIN_BYTES=0 TRACEKIT_SPILL_DIR=$PWD/spill expect_status 0 "$I" -q --max-memory $limit -o "spill$k.db" "$f"
        sqlite3 "spill$k.db" .dump > spill.sql
        cmp -s mem.sql spill.sql || fail "$(basename "$f") --max-memory $limit: the spilled ingest differs from the one in memory"
        [ -z "$(ls -A spill)" ] || fail "$(basename "$f"): files left in the spill directory"
    done
done
# several inputs in one run database, spilled
TR_SPILL_MIN_BYTES=0 expect_status 0 "$I" -q --max-memory 1M -o both.db "$root/sample-traces/lm-step.nvvp" \
    "$root/sample-traces/lm-step.nvvp"
expect_status 0 "$I" -q -o both-mem.db "$root/sample-traces/lm-step.nvvp" "$root/sample-traces/lm-step.nvvp"
[ "$(sqlite3 both.db .dump | md5sum)" = "$(sqlite3 both-mem.db .dump | md5sum)" ] || fail "two inputs: spilled differs"
# no spill file can be made: the arrays stay on the heap, same result
TR_SPILL_MIN_BYTES=0 TRACEKIT_SPILL_DIR=$TMP/no-such-dir expect_status 0 "$I" -q --max-memory 1M -o nodir.db \
    "$root/sample-traces/lm-step.nvvp"
[ "$(sqlite3 nodir.db .dump | md5sum)" = "$(sqlite3 mem1.db .dump | md5sum)" ] || fail "no spill directory: differs"
# the limit is a size
for bad in 0 12x 1.5G -1 ""; do
    expect_status 2 "$I" -q --max-memory "$bad" -o bad.db "$root/sample-traces/lm-step.nvvp"
    expect_one_line_error
    expect_no_file bad.db
done
TRACEKIT_MAX_MEMORY=64M expect_status 0 "$I" -q -o env.db "$root/sample-traces/lm-step.nvvp"
