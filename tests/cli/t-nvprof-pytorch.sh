# emit_nvtx annotations: op names without the ", seq =" suffix, seq stored,
# and the table's rows are ops with their kernels' GPU time, in ns-correct units.
need_traces || return 0
f="$TRACES/nvprof/profiling-lm__net-17ed9e2.sql"
expect_status 0 "$BIN/trace-ingest" -q -o lm.db "$f"
expect_eq "$(q lm.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value LIKE '%, seq =%'")" 0 "names with seq suffix"
expect_eq "$(q lm.db "SELECT count(*) FROM events WHERE seq IS NOT NULL")" \
    "$(q "$f" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MARKER m JOIN StringTable s ON s._id_ = m.name WHERE s.value LIKE '%, seq = %'")" "ops with seq"
expect_eq "$(q lm.db "SELECT s.value FROM events e JOIN strings s ON s.id = e.name_id WHERE e.seq = 65 AND e.kind = 2 ORDER BY e.start_ns LIMIT 1")" "embedding"
# the raw annotation is kept
expect_eq "$(q lm.db "SELECT r.value FROM events e JOIN strings r ON r.id = e.raw_name_id WHERE e.seq = 65 AND e.kind = 2 ORDER BY e.start_ns LIMIT 1")" "embedding, seq = 65"
expect_status 0 "$BIN/trace-analyze" -n 8 lm.db
golden nvprof-lm-table.txt "$TMP/out"
# the first rows are ops (embedding, mul, add, mm, ...) carrying their kernels' GPU time
top=$(sed -n '4p' "$TMP/out" | awk '{print $1}')
expect_eq "$top" "mm" "top row by self GPU"
grep -q '^ *embedding ' "$TMP/out" || expect_status 0 "$BIN/trace-analyze" -n -1 lm.db
expect_grep ' embedding ' "$TMP/out"
# units: a 9 us range must print as microseconds, not milliseconds (nvprof stores ns)
expect_grep 'Self CUDA time total: 7.347ms' "$TMP/out"
# demangled kernel names, raw names kept
expect_eq "$(q lm.db "SELECT count(*) FROM events WHERE kind = 7 AND flags & 4 AND raw_name_id IS NOT NULL")" \
    "$(q lm.db "SELECT count(*) FROM events e JOIN strings s ON s.id = coalesce(e.raw_name_id, e.name_id) WHERE kind = 7 AND s.value LIKE '\_Z%' ESCAPE '\\'")" "demangled kernels"
