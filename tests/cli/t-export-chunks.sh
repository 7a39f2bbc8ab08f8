# The export scan sorts its rows a chunk at a time and merges the chunks from a temporary
# file past 64 MiB; with TR_SCAN_CHUNK_ROWS=16 every trace here goes through that merge,
# and every export must come out byte for byte as from one chunk.
X="$BIN/trace-export" I="$BIN/trace-ingest"
root=$(cd "$GOLDEN_DIR/../../.." && pwd)
inputs="$root/sample-traces/lm-step.nvvp"
if [ -n "$TRACES" ]; then
    for f in "$TRACES"/kineto/TraceLens__h100_gaunernst_bert-small-uncased.json.gz \
             "$TRACES"/kineto/HTA__critical_path_alexnet_trace.json.gz \
             "$TRACES"/nsys/cuda-perf-sandbox__report1.sqlite "$TRACES"/nvprof/blinkplus-nccl-base__output.nvvp; do
        [ -f "$f" ] && inputs="$inputs $f"
    done
fi
k=0
for f in $inputs; do
    k=$((k + 1))
    expect_status 0 "$I" -q -o "in$k.db" "$f"
    for how in "--stacks" "--stacks --metric self_gpu" "--flamegraph" "--chrome" "--events --format csv" "--html"; do
        "$X" $how -o one.out "in$k.db" 2>/dev/null
        TR_SCAN_CHUNK_ROWS=16 "$X" $how -o many.out "in$k.db" 2>/dev/null
        cmp -s one.out many.out || fail "$(basename "$f") $how: the merge of small chunks differs"
    done
done
# the temporary file cannot be made: one line, exit 1, no output left
TMPDIR=$TMP/no-such-dir TR_SCAN_CHUNK_ROWS=16 expect_status 1 "$X" --stacks -o nochunk.folded in1.db
expect_one_line_error
expect_no_file nochunk.folded
# --chrome steps the events on two helper threads, alternate blocks of ids each, and merges
# their rows back by id: with blocks of 7 ids every trace here alternates thousands of times,
# and every export must come out byte for byte as from one reader (and, gzipped, the same).
k=0
for f in $inputs; do
    k=$((k + 1))
    TR_EXPORT_READ_BLOCK=0 "$X" --chrome -o one.json "in$k.db" 2>/dev/null
    TR_EXPORT_READ_BLOCK=7 "$X" --chrome -o many.json "in$k.db" 2>/dev/null
    cmp -s one.json many.json || fail "$(basename "$f") --chrome: two readers' merge differs"
    "$X" --chrome -o many.json.gz "in$k.db" 2>/dev/null
    gzip -dc many.json.gz | cmp -s one.json - || fail "$(basename "$f") --chrome: the gzip writer differs"
done
