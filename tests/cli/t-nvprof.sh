# nvprof ingest: for every shared nvprof file, run.db holds exactly the source's
# events, kernel time to the nanosecond, every launch link, and a consistent tree.
need_traces || return 0

# src_count DB TABLE [WHERE]: rows in a source table, 0 when the table is absent
src_count() {
    if [ -n "$(q "$1" "SELECT name FROM sqlite_master WHERE type='table' AND name='$2'")" ]; then
        q "$1" "SELECT count(*) FROM $2 ${3:-}"
    else echo 0; fi
}
src_sum() {
    if [ -n "$(q "$1" "SELECT name FROM sqlite_master WHERE type='table' AND name='$2'")" ]; then
        q "$1" "SELECT coalesce(sum(\"end\" - start), 0) FROM $2"
    else echo 0; fi
}

for f in "$TRACES"/nvprof/*; do
    b=$(basename "$f")
    db="$TMP/$b.db"
    expect_status 0 "$BIN/trace-ingest" -q -o "$db" "$f" || continue
    K=CUPTI_ACTIVITY_KIND
    kernels=$(( $(src_count "$f" ${K}_CONCURRENT_KERNEL) + $(src_count "$f" ${K}_KERNEL) ))
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=7")" "$kernels" "$b: kernels"
    ksum=$(( $(src_sum "$f" ${K}_CONCURRENT_KERNEL) + $(src_sum "$f" ${K}_KERNEL) ))
    expect_eq "$(q "$db" "SELECT coalesce(sum(end_ns-start_ns),0) FROM events WHERE kind=7")" "$ksum" "$b: kernel ns"
    copies=$(( $(src_count "$f" ${K}_MEMCPY) + $(src_count "$f" ${K}_MEMCPY2) ))
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=8")" "$copies" "$b: copies"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=9")" "$(src_count "$f" ${K}_MEMSET)" "$b: sets"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=6")" "$(src_count "$f" ${K}_SYNCHRONIZATION)" "$b: syncs"
    apis=$(( $(src_count "$f" ${K}_RUNTIME) + $(src_count "$f" ${K}_DRIVER) ))
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind IN (4,5)")" "$apis" "$b: API calls"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind IN (1,2)")" \
        "$(src_count "$f" ${K}_MARKER "WHERE flags & 2")" "$b: NVTX ranges"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=3")" \
        "$(src_count "$f" ${K}_MARKER "WHERE flags & 1")" "$b: NVTX marks"
    # every GPU activity whose launching call is in the source is linked to it
    linked=$(q "$db" "SELECT count(*) FROM events g JOIN events a ON a.id = g.parent_id
                      WHERE g.kind IN (7,8,9) AND a.kind IN (4,5) AND a.correlation = g.correlation")
    launchable=$(q "$db" "SELECT count(*) FROM events g WHERE g.kind IN (7,8,9) AND EXISTS
                          (SELECT 1 FROM events a WHERE a.kind IN (4,5) AND a.correlation = g.correlation)")
    expect_eq "$linked" "$launchable" "$b: linked GPU activities"
    # GPU total = self + children's totals, for every CPU event; self CPU never negative
    bad=$(q "$db" "SELECT count(*) FROM events p JOIN kinds k ON k.id = p.kind WHERE k.on_gpu = 0
                   AND p.gpu_total_ns != p.gpu_self_ns + (SELECT coalesce(sum(c.gpu_total_ns), 0)
                   FROM events c JOIN kinds ck ON ck.id = c.kind WHERE c.parent_id = p.id AND ck.on_gpu = 0)")
    expect_eq "$bad" 0 "$b: ranges whose GPU total != self + children"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE cpu_self_ns < 0 OR gpu_self_ns < 0")" 0 "$b: negative self"
    # each activity is counted once: device self time = CPU-side self time of launched work
    expect_eq "$(q "$db" "SELECT coalesce(sum(gpu_self_ns),0) FROM events WHERE kind IN (7,8,9) AND parent_id IS NOT NULL")" \
        "$(q "$db" "SELECT coalesce(sum(gpu_self_ns),0) FROM events WHERE kind NOT IN (7,8,9)")" "$b: GPU self once per level"
    # children lie inside their parent on the same thread
    expect_eq "$(q "$db" "SELECT count(*) FROM events c JOIN events p ON p.id = c.parent_id
                          WHERE c.kind NOT IN (7,8,9) AND (c.thread_id != p.thread_id
                          OR c.start_ns < p.start_ns OR c.end_ns > p.end_ns)")" 0 "$b: nesting"
done
