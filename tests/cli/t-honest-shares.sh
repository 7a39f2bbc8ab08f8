# Shares in the default table are honest: never NaN, never over 100%, and a filtered
# table says what its percentages are of. --compat torch keeps PyTorch's own (NaN included).
sample="$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
expect_status 0 "$BIN/trace-ingest" -q -o s.db "$sample"
no_bad_share() {   # FILE WHAT
    if grep -q 'NaN' "$1"; then fail "$2: NaN in the table"; fi
    over=$(grep -oE '[0-9]+\.[0-9]+%' "$1" | tr -d '%' | awk '$1 > 100' | head -1)
    [ -z "$over" ] || fail "$2: a share over 100% ($over)"
}
for args in "--kind ops" "--kind range,op" "--top-level" "--include ^aten::" "--kind kernel" \
            "--include ^nothing-matches$"; do
    # shellcheck disable=SC2086
    expect_status 0 "$BIN/trace-analyze" -n -1 $args s.db
    no_bad_share "$TMP/out" "$args"
    [ -s "$TMP/out" ] && { grep -q "^Percentages are of the [0-9]* events shown" "$TMP/out" \
        || fail "$args: no footer saying what the shares are of"; }
done
# ops alone: no device rows, so Self CUDA % is of the GPU time the ops launched
expect_status 0 "$BIN/trace-analyze" -n -1 --kind ops --format csv s.db
sum=$(awk -F, 'NR > 1 { for (i = 1; i <= NF; i++) if (h[i] == "self_gpu_pct") s += $i } NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i } END { printf "%.0f", s }' "$TMP/out")
expect_eq "$sum" 100 "--kind ops: Self CUDA % sums to 100"
# unfiltered: no footer note, PyTorch's layout
expect_status 0 "$BIN/trace-analyze" s.db
expect_no_grep "Percentages are of" "$TMP/out"
# PyTorch's own layout prints NaN where it has no denominator
expect_status 0 "$BIN/trace-analyze" --compat torch --kind ops -n 3 s.db
expect_grep "NaN" "$TMP/out"
if need_traces; then
    expect_status 0 "$BIN/trace-ingest" -q -o q.db "$TRACES/kineto/TraceLens__h100_Qwen1.5-0.5B-Chat.json.gz"
    for args in "--kind ops" "--top-level" "--include aten::(mm|linear|matmul)"; do
        # shellcheck disable=SC2086
        expect_status 0 "$BIN/trace-analyze" -n -1 $args q.db
        no_bad_share "$TMP/out" "Qwen $args"
    done
fi
