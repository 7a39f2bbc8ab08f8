# nvprof ingest: for every shared nvprof file, run.db holds exactly the source's
# events, kernel time to the nanosecond, every launch link, and a consistent tree.
# First, small hand-made databases for what the shared files lack.

# base TABLES: the tables every fixture has (pid 100, tid 7, device 0 in context 1)
base() {
    cat <<'SQL'
CREATE TABLE Version(version INT); INSERT INTO Version VALUES (12);
CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT);
INSERT INTO StringTable VALUES (0, '-- null --'), (1, 'saxpy.c'), (2, 'main'), (3, 'main_12_gpu'),
    (4, 'x'), (5, '_Z5saxpyifPfS_');
CREATE TABLE CUPTI_ACTIVITY_KIND_CONTEXT(contextId INT, deviceId INT);
INSERT INTO CUPTI_ACTIVITY_KIND_CONTEXT VALUES (1, 0);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT, start INT, "end" INT,
    processId INT, threadId INT, correlationId INT, returnValue INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ INTEGER PRIMARY KEY, start INT, "end" INT,
    deviceId INT, contextId INT, streamId INT, correlationId INT, name INT);
SQL
}
ACC="_id_ INTEGER PRIMARY KEY, eventKind INT, parentConstruct INT, version INT, implicit INT, deviceType INT, deviceNumber INT,
    threadId INT, async INT, asyncMap INT, lineNo INT, endLineNo INT, funcLineNo INT, funcEndLineNo INT,
    start INT, \"end\" INT, cuDeviceId INT, cuContextId INT, cuStreamId INT, cuProcessId INT,
    cuThreadId INT, externalId INT, srcFile INT, funcName INT"
ACCV="0, 0, 4, 0, 7, 0, 0"   # version .. asyncMap
{ base; cat <<SQL
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_DATA($ACC, bytes INT, hostPtr INT, devicePtr INT, varName INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH($ACC, numGangs INT, numWorkers INT, vectorLength INT,
    kernelName INT);
CREATE TABLE CUPTI_ACTIVITY_KIND_OPENACC_OTHER($ACC);
INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_OTHER VALUES (NULL, 9, 2, $ACCV, 12, 14, 5, 20, 1000, 9000, 0, 1, 13,
    100, 7, 1, 1, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_DATA VALUES (NULL, 5, 2, $ACCV, 12, 14, 5, 20, 1100, 1900, 0, 1, 13,
    100, 7, 2, 1, 2, 4096, 0, 0, 4);
INSERT INTO CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH VALUES (NULL, 4, 2, $ACCV, 12, 14, 5, 20, 2000, 3000, 0, 1, 13,
    100, 7, 3, 1, 2, 80, 1, 128, 3);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 2100, 2900, 100, 7, 50, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (1, 3000, 7000, 0, 1, 13, 50, 5);
SQL
} | q acc.nvvp
expect_status 0 "$BIN/trace-ingest" -o acc.db acc.nvvp
expect_no_grep warning "$TMP/err"
expect_eq "$(q acc.db "SELECT group_concat(k.name || '=' || s.value, '|') FROM (SELECT * FROM events ORDER BY kind)
                       e JOIN kinds k ON k.id = e.kind JOIN strings s ON s.id = e.name_id WHERE e.kind >= 12")" \
    "openacc_data=acc_enqueue_upload@saxpy.c:12 (x) [kernels]|openacc_launch=acc_enqueue_launch@saxpy.c:12 (main_12_gpu) [kernels]|openacc_other=acc_compute_construct@saxpy.c:12 [kernels]" \
    "OpenACC kinds and names"
expect_eq "$(q acc.db "SELECT bytes FROM events WHERE kind = 12")" 4096 "OpenACC upload bytes"
# the launch encloses the API call, so it takes the kernel's GPU time; the construct holds it in total
expect_eq "$(q acc.db "SELECT kind || ':' || gpu_self_ns || ':' || gpu_total_ns FROM events WHERE kind IN (13, 14) ORDER BY kind")" \
    "$(printf '13:4000:4000\n14:0:4000')" "OpenACC GPU time"
expect_eq "$(q acc.db "SELECT p.kind FROM events e JOIN events p ON p.id = e.parent_id WHERE e.kind = 4")" 13 "API call inside the launch"
expect_status 0 "$BIN/trace-analyze" --kind openacc_launch,openacc_data acc.db
expect_grep 'acc_enqueue_launch@saxpy.c:12' "$TMP/out"
expect_no_grep 'acc_compute_construct' "$TMP/out"
for fmt in --flamegraph --chrome --stacks; do
    expect_status 0 "$BIN/trace-export" $fmt -o "acc.out" acc.db
done

# unusable times are skipped with a counted warning, never read as 0; unread tables are named;
# a kernel table without launch columns gives NULL launch fields
{ base; cat <<'SQL'
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 1000, 1100, 100, 7, 1, 0), (2, 211, NULL, 1300, 100, 7, 2, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (1, 2000, 2500, 0, 1, 13, 1, 5),
    (2, NULL, 3000, 0, 1, 13, 2, 5), (3, 4000, NULL, 0, 1, 13, 2, 5), (4, 6000, 5000, 0, 1, 13, 2, 5);
CREATE TABLE CUPTI_ACTIVITY_KIND_PCIE(_id_ INTEGER PRIMARY KEY, type INT);
INSERT INTO CUPTI_ACTIVITY_KIND_PCIE(type) VALUES (1), (2);
CREATE TABLE CUPTI_ACTIVITY_KIND_ENVIRONMENT(_id_ INTEGER PRIMARY KEY, deviceId INT);
SQL
} | q bad.nvvp
expect_status 0 "$BIN/trace-ingest" -o bad.db bad.nvvp
expect_grep 'table=CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: 2 row(s) without a start or end time skipped' "$TMP/err"
expect_grep 'table=CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: 1 row(s) ending before they start' "$TMP/err"
expect_grep 'table=CUPTI_ACTIVITY_KIND_RUNTIME: 1 row(s) without a start or end time skipped' "$TMP/err"
expect_grep ': 1 table(s) not read (rows): PCIE 2$' "$TMP/err"
expect_eq "$(q bad.db "SELECT count(*) || ':' || sum(end_ns - start_ns) || ':' || min(start_ns) FROM events WHERE kind = 7")" "1:500:2000" "kernels kept"
expect_eq "$(q bad.db "SELECT count(*) FROM events WHERE kind = 4")" 1 "API calls kept"
expect_eq "$(q bad.db "SELECT quote(grid_x) || quote(block_z) || quote(registers_per_thread) || quote(dynamic_shared_bytes) FROM kernels")" \
    "NULLNULLNULLNULL" "missing launch fields"
expect_status 0 "$BIN/trace-analyze" bad.db
expect_grep 'Self CPU time total: 0.100us' "$TMP/out"

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

# the tables the reader reads; every other table with rows is named in its warning
READ_TABLES=" Version StringTable sqlite_sequence DEVICE CONTEXT NAME RUNTIME DRIVER CONCURRENT_KERNEL \
 KERNEL MEMCPY MEMCPY2 MEMSET SYNCHRONIZATION CUDA_EVENT OPENACC_DATA OPENACC_LAUNCH OPENACC_OTHER \
 OVERHEAD MARKER "

for f in "$TRACES"/nvprof/*; do
    b=$(basename "$f")
    db="$TMP/$b.db"
    expect_status 0 "$BIN/trace-ingest" -o "$db" "$f" || continue
    cp "$TMP/err" "$TMP/ingest.err"
    K=CUPTI_ACTIVITY_KIND
    unread=0
    for t in $(q "$f" "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"); do
        case "$READ_TABLES" in *" ${t#${K}_} "*) continue ;; esac
        n=$(q "$f" "SELECT count(*) FROM \"$t\"")
        [ "$n" = 0 ] && continue
        unread=$((unread + 1))
        grep -q "not read (rows): .*\b${t#${K}_} $n\b" "$TMP/ingest.err" || fail "$b: $t ($n rows) not named as unread"
    done
    if [ "$unread" = 0 ]; then expect_no_grep 'not read' "$TMP/ingest.err"
    else expect_grep ": $unread table(s) not read (rows): " "$TMP/ingest.err"; fi
    # CUDA events (each has its cudaEventRecord call here) and overhead rows with a time
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=15")" "$(src_count "$f" ${K}_CUDA_EVENT)" "$b: CUDA events"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=15 AND (stream_id IS NULL OR end_ns != start_ns
                          OR parent_id IS NULL)")" 0 "$b: CUDA events on a stream, zero length, under their call"
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=16")" \
        "$(src_count "$f" ${K}_OVERHEAD "WHERE NOT (start = 0 AND \"end\" = 0)")" "$b: overhead rows"
    # an overhead row without a thread is out of the tree and has no self time
    expect_eq "$(q "$db" "SELECT count(*) FROM events WHERE kind=16 AND thread_id IS NULL AND (flags & 1 = 0 OR cpu_self_ns != 0)")" 0 "$b: thread-less overhead"
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
# a write-ahead log beside the database: its changes are not read, and that is said
need_traces && {
    cp "$TRACES"/nvprof/profiling-lm__net-17ed9e2.sql wal.sql && chmod u+w wal.sql
    python3 -c "import sqlite3, os; c = sqlite3.connect('wal.sql', isolation_level=None)
c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')
c.execute('DELETE FROM CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL'); os._exit(0)"
    expect_status 0 "$BIN/trace-ingest" -o wal.db wal.sql
    expect_grep 'wal.sql-wal holds [0-9]* bytes of changes not written into the database; they are not read' "$TMP/err"
}
