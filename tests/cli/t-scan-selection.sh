# What the scan does for a selection beside testing each event.
sample="$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
# The selection's tests made in SQL leave the tree whole: a kernel's stack is its
# launching call's ancestry, though --kind keeps no call.
expect_status 0 "$BIN/trace-ingest" -q -o k.db "$sample"
expect_status 0 "$BIN/trace-analyze" --group-by-stack 2 --kind kernel --format csv -n -1 k.db
expect_grep ",cudaLaunchKernel <- EmbeddingBackward0$" "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --group-by-stack 2 --time-range 1ms: --kind kernel --format csv -n -1 k.db
expect_grep ",cudaLaunchKernel <- EmbeddingBackward0$" "$TMP/out"
# A filtered table's CPU total % is of the host time its events cover: the union of
# their spans, thread by thread.  The scan gathers it as it reads the events, which
# come in id order, not start order; and two thread rows of one thread id join their
# spans (the sorted second scan).  Known spans here, each way.
expect_status 0 "$BIN/trace-ingest" -q -o s.db "$sample"
q s.db "DELETE FROM events; DELETE FROM threads;
INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 11), (2, 1, 12);
INSERT INTO events(id, kind, name_id, start_ns, end_ns, thread_id, depth, flags, cpu_total_ns,
    cpu_self_ns, gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self)
VALUES (1, 2, 2, 100, 200, 1, 0, 0, 100, 1, 0, 0, 0, 0, 0, 0),
       (2, 2, 2, 0, 50, 1, 0, 0, 50, 1, 0, 0, 0, 0, 0, 0),
       (3, 2, 2, 40, 120, 1, 0, 0, 80, 1, 0, 0, 0, 0, 0, 0),
       (4, 2, 2, 300, 400, 1, 0, 0, 100, 1, 0, 0, 0, 0, 0, 0),
       (5, 2, 3, 350, 500, 2, 0, 0, 150, 1, 0, 0, 0, 0, 0, 0);"
share() {   # NAME DB: the row's cpu_total_pct with a filter that keeps every op
    "$BIN/trace-analyze" --kind ops --format csv -n -1 "$2" \
        | awk -F, -v n="$1" '$1 == n { printf "%.4f", $5 }'
}
name2=$(q s.db 'SELECT value FROM strings WHERE id = 2')
# thread 11: [0,50] [40,120] [100,200] [300,400] out of order -> 300; thread 12: 150
expect_eq "$(share "$name2" s.db)" "$(awk 'BEGIN { printf "%.4f", 330 / 450 * 100 }')" "spans out of order"
q s.db "UPDATE threads SET tid = 11 WHERE id = 2"
# one thread id: [300,400] and [350,500] join -> 200 + 200
expect_eq "$(share "$name2" s.db)" "$(awk 'BEGIN { printf "%.4f", 330 / 400 * 100 }')" "two thread rows of one thread"
