# Nsight Systems SQLite export reader: bad input, counts against the source tables.

# --- bad input: exit 3, one line, no output left behind ---
q other.sqlite "create table foo(x integer); insert into foo values (1);"
expect_status 3 "$BIN/trace-ingest" -o other.db other.sqlite
expect_one_line_error
expect_grep 'other.sqlite' "$TMP/err"
expect_grep 'nsys' "$TMP/err"
expect_no_file other.db

# looks like an export but NVTX_EVENTS lacks its required columns
q broken.sqlite "create table StringIds(id integer, value text); create table NVTX_EVENTS(x integer);"
expect_status 3 "$BIN/trace-ingest" -o broken.db broken.sqlite
expect_one_line_error
expect_grep 'NVTX_EVENTS' "$TMP/err"
expect_no_file broken.db

# a tiny hand-made export: text inline and via textId, emit_nvtx names, an unterminated range
q tiny.sqlite "
create table StringIds(id integer primary key, value text);
insert into StringIds values (1, 'outer'), (2, 'cudaLaunchKernel_v7000'), (3, 'void k<int>(int)'), (4, '_Z1kIiEvi');
create table NVTX_EVENTS(start integer, end integer, eventType integer, text text, textId integer,
                         globalTid integer, endGlobalTid integer, domainId integer, extra_col text);
insert into NVTX_EVENTS values (100, 1000, 59, null, 1, (7 << 24) | 8, null, 0, 'x'),
  (200, 900, 59, 'aten::mm, seq = 3, op_id = 9, sizes = [[2, 3], [3, 4]]', null, (7 << 24) | 8, null, 0, null),
  (950, null, 59, 'open', null, (7 << 24) | 8, null, 0, null),
  (960, null, 34, 'mark', null, (7 << 24) | 8, null, 0, null),
  (0, null, 75, 'a domain', null, (7 << 24) | 8, null, 1, null);
create table CUPTI_ACTIVITY_KIND_RUNTIME(start integer, end integer, eventClass integer, globalTid integer,
                                         correlationId integer, nameId integer, returnValue integer);
insert into CUPTI_ACTIVITY_KIND_RUNTIME values (300, 400, 0, (7 << 24) | 8, 42, 2, 0);
create table CUPTI_ACTIVITY_KIND_KERNEL(start integer, end integer, deviceId integer, contextId integer,
    streamId integer, correlationId integer, globalPid integer, demangledName integer, shortName integer,
    mangledName integer, gridX integer, gridY integer, gridZ integer, blockX integer, blockY integer, blockZ integer);
insert into CUPTI_ACTIVITY_KIND_KERNEL values (500, 1500, 0, 1, 7, 42, 7 << 24, 3, null, 4, 2, 1, 1, 128, 1, 1);
create table ThreadNames(nameId integer, priority integer, globalTid integer);
insert into StringIds values (5, 'main thread');
insert into ThreadNames values (5, 0, (7 << 24) | 8);
"
expect_status 0 "$BIN/trace-ingest" -o tiny.db tiny.sqlite
expect_grep 'never ended' "$TMP/err"
expect_eq "$(q tiny.db "select count(*) from events")" "6" "tiny: events"
expect_eq "$(q tiny.db "select s.value, e.seq, e.op_id, sh.value from events e join strings s on s.id = e.name_id
            join strings sh on sh.id = e.shape_id where e.kind = 2")" "aten::mm|3|9|[[2, 3], [3, 4]]" "tiny: emit_nvtx"
expect_eq "$(q tiny.db "select s.value from events e join strings s on s.id = e.name_id where e.kind = 4")" "cudaLaunchKernel" "tiny: API name"
expect_eq "$(q tiny.db "select ps.value from events e join events p on p.id = e.parent_id join strings ps on ps.id = p.name_id where e.kind = 7")" "cudaLaunchKernel" "tiny: kernel linked to its launch"
expect_eq "$(q tiny.db "select end_ns, flags & 2 from events e join strings s on s.id = e.name_id where s.value = 'open'")" "1500|2" "tiny: unterminated range"
expect_eq "$(q tiny.db "select p.pid, t.tid, s.value from threads t join processes p on p.id = t.process_id join strings s on s.id = t.name_id")" "7|8|main thread" "tiny: thread name"

need_traces || return 0

# --- every shared nsys export ingests; counts equal the source tables ---
cnt() {   # cnt FILE TABLE [WHERE]: rows, 0 when the table is absent
    if [ -n "$(q "$1" "select name from sqlite_master where type = 'table' and name = '$2'")" ]; then
        q "$1" "select count(*) from $2 ${3:-}"
    else
        echo 0
    fi
}
for f in "$TRACES"/nsys/*.sqlite; do
    b=$(basename "$f")
    expect_status 0 "$BIN/trace-ingest" -q -o one.db "$f"
    expect_eq "$(q one.db "select count(*) from events where kind = 7")" \
              "$(cnt "$f" CUPTI_ACTIVITY_KIND_KERNEL)" "$b: kernels"
    expect_eq "$(q one.db "select count(*) from events where kind = 4")" \
              "$(cnt "$f" CUPTI_ACTIVITY_KIND_RUNTIME)" "$b: runtime calls"
    expect_eq "$(q one.db "select count(*) from events where kind in (1, 2)")" \
              "$(cnt "$f" NVTX_EVENTS "where eventType in (59, 60)")" "$b: NVTX ranges"
    expect_eq "$(q one.db "select count(*) from events where kind = 8")" \
              "$(cnt "$f" CUPTI_ACTIVITY_KIND_MEMCPY)" "$b: copies"
    expect_eq "$(q one.db "select count(*) from events where kind = 7 and parent_id is null")" "0" \
              "$b: every kernel linked to its launch"
    rm -f one.db
done

# emit_nvtx names through nsys: parsed into op name + seq
expect_status 0 "$BIN/trace-ingest" -q -o dl.db "$TRACES/nsys/DLProf__nsys_profile.sqlite"
n=$(q dl.db "select count(*) from events e join strings s on s.id = e.name_id where e.kind = 2 and s.value = 'aten::conv2d' and e.seq >= 0")
[ "$n" -gt 0 ] || fail "DLProf: emit_nvtx 'aten::conv2d, seq = N' not parsed"
# names via textId (pipit) resolve through StringIds
expect_status 0 "$BIN/trace-ingest" -q -o pp.db "$TRACES/nsys/pipit__saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
n=$(q pp.db "select count(*) from events e join strings s on s.id = e.name_id where e.kind = 1 and s.value = 'MPI_Send'")
[ "$n" -gt 0 ] || fail "pipit: NVTX text via textId"

# --- one workload, two formats: gen-nvprof writes the same rows as an nvprof database
# and as an nsys export (nsys's table and column names, StringIds, packed globalTids,
# NVTX ranges as one row each with inline text, memory kinds counted from 0), so every
# table and report agrees; only the source line and the thread names nsys carries differ
expect_status 0 "$BIN/gen-nvprof" -n 30000 -o same.nvvp
expect_status 0 "$BIN/gen-nvprof" -f nsys -n 30000 -o same.sqlite
expect_status 0 "$BIN/trace-ingest" -q -o same-nvprof.db same.nvvp
expect_status 0 "$BIN/trace-ingest" -q -o same-nsys.db same.sqlite
expect_eq "$(q same-nsys.db 'SELECT format FROM sources')" "nsys" "format of the generated export"
expect_eq "$(q same-nsys.db 'SELECT count(*) FROM events')" "$(q same-nvprof.db 'SELECT count(*) FROM events')" "events"
for opts in "-n -1" "-n -1 --group-by-shape" "--report gpu-time" "--report kernels" "--report api" \
            "--report launch" "--report gaps"; do
    "$BIN/trace-analyze" $opts same-nvprof.db > same-nvprof.txt 2>&1 || fail "analyze $opts (nvprof)"
    "$BIN/trace-analyze" $opts same-nsys.db > same-nsys.txt 2>&1 || fail "analyze $opts (nsys)"
    cmp -s same-nvprof.txt same-nsys.txt || fail "trace-analyze $opts differs between the nvprof and nsys forms"
done
"$BIN/trace-export" --stacks -o same-nvprof.folded same-nvprof.db || fail "stacks (nvprof)"
"$BIN/trace-export" --stacks -o same-nsys.folded same-nsys.db || fail "stacks (nsys)"
cmp -s same-nvprof.folded same-nsys.folded || fail "--stacks differs between the nvprof and nsys forms"
expect_status 0 "$BIN/trace-analyze" --report summary same-nsys.db
expect_grep 'pt_autograd_0' "$TMP/out"
expect_status 2 "$BIN/gen-nvprof" -f nvtx -o never.db

# --- rows in start order: nsys writes its tables sorted by start, so they are read
# in rowid order without sorting them again; a table out of order is sorted.  Ties keep
# their rowid order either way, so an export whose tables hold the same rows with the
# groups of equal starts moved about (each group's rows in their order) gives the same
# events.  Starts rounded to 20 us make ties in every table.
cp same.sqlite tied.sqlite
for t in CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY NVTX_EVENTS; do
    q tied.sqlite "UPDATE $t SET start = start - start % 20000"
done
expect_eq "$(q tied.sqlite 'SELECT sum(d < 0), sum(d = 0) > 1000 FROM
             (SELECT start - lag(start) OVER (ORDER BY rowid) AS d FROM CUPTI_ACTIVITY_KIND_RUNTIME)')" \
          "0|1" "the rounded export: in order, with ties"
cp tied.sqlite moved.sqlite
for t in CUPTI_ACTIVITY_KIND_RUNTIME CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY NVTX_EVENTS; do
    q moved.sqlite "CREATE TABLE m AS SELECT * FROM $t ORDER BY (start / 20000 * 7919) % 1000003, rowid;
                    DELETE FROM $t; INSERT INTO $t SELECT * FROM m; DROP TABLE m"
done
expect_eq "$(q moved.sqlite 'SELECT sum(d < 0) > 0 FROM
             (SELECT start - lag(start) OVER (ORDER BY rowid) AS d FROM CUPTI_ACTIVITY_KIND_KERNEL)')" 1 "kernels moved out of order"
expect_status 0 "$BIN/trace-ingest" -q -o tied.db tied.sqlite
expect_status 0 "$BIN/trace-ingest" -q -o moved.db moved.sqlite
for query in "SELECT * FROM events" "SELECT * FROM strings WHERE value NOT LIKE '%.sqlite'" \
             "SELECT * FROM kernels" "SELECT * FROM api_calls" "SELECT * FROM copies"; do
    table=${query#*FROM }
    q tied.db "$query" > tied.rows
    q moved.db "$query" > moved.rows
    cmp -s tied.rows moved.rows || fail "$table: an export in start order and the same rows sorted differ"
done
# a start that is not an integer sends the table to SQLite's sort; the reader skips its row
cp tied.sqlite oddstart.sqlite
q oddstart.sqlite "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + 0.5 WHERE rowid = 9"
expect_status 0 "$BIN/trace-ingest" -q -o oddstart.db oddstart.sqlite
expect_eq "$(q oddstart.db 'SELECT count(*) + 1 FROM events')" "$(q tied.db 'SELECT count(*) FROM events')" "events of oddstart"
expect_eq "$(q oddstart.db 'SELECT count(*) FROM (SELECT start_ns - lag(start_ns) OVER (ORDER BY id) AS d
                            FROM events WHERE kind = 4) WHERE d < 0')" 0 "runtime calls of oddstart in start order"
# NVTX_EVENTS' times are checked as the activity tables' are: a start no trace can hold,
# an end before the start and a start that is text are skipped, counted and said
cp tied.sqlite badnvtx.sqlite
q badnvtx.sqlite "UPDATE NVTX_EVENTS SET start = -9223372036854775808 WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS WHERE eventType = 59);
                  UPDATE NVTX_EVENTS SET \"end\" = start - 5 WHERE rowid = (SELECT max(rowid) FROM NVTX_EVENTS WHERE eventType = 59);
                  UPDATE NVTX_EVENTS SET start = 'soon' WHERE rowid = (SELECT min(rowid) + 1 FROM NVTX_EVENTS WHERE eventType = 59)"
expect_status 0 "$BIN/trace-ingest" -o badnvtx.db badnvtx.sqlite
expect_grep 'table=NVTX_EVENTS: 2 row(s) ending before they start (or with impossible times) skipped' "$TMP/err"
expect_grep 'table=NVTX_EVENTS: 1 row(s) without a start or end time skipped' "$TMP/err"
expect_eq "$(q badnvtx.db 'SELECT count(*) + 3 FROM events')" "$(q tied.db 'SELECT count(*) FROM events')" "events of badnvtx"
expect_eq "$(q badnvtx.db 'SELECT count(*) FROM events WHERE end_ns < start_ns OR cpu_total_ns < 0')" 0 "badnvtx: no impossible times"
