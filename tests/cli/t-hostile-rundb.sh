# Hostile run.dbs given to trace-analyze and trace-export: parent_id loops and
# self-parents among GPU events, a 10^6-deep and a sparse stack_nodes chain,
# stack cycles, views, recursive views, triggers and generated columns in
# place of tables, wrong user_versions, special files, extreme times.
# Every tool on every case: exit 0, 2 or 3 (never a crash, never past the
# timeout), one stderr line naming the file when it says anything, no
# temporary file left, the input unchanged.
T=${HOSTILE_TIMEOUT:-10}
cat >trace.json <<'EOF'
{"schemaVersion":1,"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":40},
{"ph":"X","cat":"python_function","name":"a.py(1): f","pid":1,"tid":1,"ts":1,"dur":30,"args":{"Python id":1,"Python parent id":null}},
{"ph":"X","cat":"python_function","name":"b.py(2): g","pid":1,"tid":1,"ts":2,"dur":20,"args":{"Python id":2,"Python parent id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":3,"dur":10,"args":{"Input Dims":[[2,3],[3,4]]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":4,"dur":2,"args":{"correlation":9,"cbid":211}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":7,"dur":2,"args":{"correlation":10,"cbid":211}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":8,"dur":2,"args":{"device":0,"stream":7,"correlation":9}},
{"ph":"X","cat":"kernel","name":"gemv","pid":0,"tid":7,"ts":11,"dur":1,"args":{"device":0,"stream":7,"correlation":10}}
]}
EOF
mkdir in
base="$TMP/in/base.db"
"$BIN/trace-ingest" -q -o "$base" trace.json || { fail "cannot ingest the base trace"; return 0; }
gpu="(SELECT e.id FROM events e JOIN kinds k ON k.id = e.kind WHERE k.on_gpu)"
[ "$(q "$base" "SELECT count(*) FROM $gpu")" -ge 2 ] && [ "$(q "$base" "SELECT count(*) FROM stack_nodes")" -ge 2 ] \
    || fail "the base run.db lacks GPU events or stack frames"

# variant NAME SQL: a copy of the base run.db changed by SQL.  The aggregates are dropped
# first: they are derived from the events at ingest (docs/schema.md), and these cases edit
# the events, so the tools must read the events themselves.  Hostile aggregates have
# variants of their own below.
variant() {
    cp "$base" "in/$1.db" && q "in/$1.db" "DROP TABLE IF EXISTS aggregates; $2" || fail "cannot make $1.db"
}

# run_tool FILE TOOL ARGS...: exit 0/2/3 in time, one line naming the file, no leftovers
run_tool() {
    f=$1; shift
    regular=0; [ -f "$f" ] && [ ! -L "$f" ] && regular=1
    [ $regular = 1 ] && sum=$(cksum <"$f")
    dir=$(dirname "$f")
    before=$(ls -a "$dir")
    rm -f out.*
    case $1 in
        trace-export) timeout -s KILL "$T" "$BIN/$@" -o "$TMP/out.x" "$f" >"$TMP/out" 2>"$TMP/err" ;;
        *) timeout -s KILL "$T" "$BIN/$@" "$f" >"$TMP/out" 2>"$TMP/err" ;;
    esac
    rc=$?
    what="$* on $(basename "$f")"
    msg=$(head -c 300 "$TMP/err")
    if [ $rc = 137 ]; then
        fail "$what: no answer within $T s"
    elif [ $rc -ge 128 ]; then
        fail "$what: crashed (exit $rc): $msg"
    elif [ $rc != 0 ] && [ $rc != 2 ] && [ $rc != 3 ]; then
        fail "$what: exit $rc: $msg"
    fi
    n=$(wc -l <"$TMP/err")
    if [ $rc != 0 ] || [ "$n" != 0 ]; then
        [ "$n" = 1 ] || fail "$what: expected one line on stderr, got $n: $(head -c 300 "$TMP/err")"
        grep -qF "$(basename "$f")" "$TMP/err" || fail "$what: message does not name the file: $(head -c 300 "$TMP/err")"
    fi
    [ $rc != 0 ] && [ -e "$TMP/out.x" ] && fail "$what: output left behind after a failure"
    ls "$TMP"/out.x.* "$TMP"/.out.x* "$dir"/*.tmp.* >/dev/null 2>&1 && fail "$what: temporary files left"
    [ "$(ls -a "$dir")" = "$before" ] || [ "$dir" = /dev ] || fail "$what: files appeared beside the input"
    [ $regular = 1 ] && [ "$(cksum <"$f")" != "$sum" ] && fail "$what: input changed"
    return 0
}

# every_tool FILE: the tools as a user runs them on a run.db
every_tool() {
    run_tool "$1" trace-analyze
    run_tool "$1" trace-analyze --group-by-stack 3
    run_tool "$1" trace-analyze --stats --format json --group-by-shape
    run_tool "$1" trace-analyze --group-by-stack 2 --stack-source tree --format csv
    run_tool "$1" trace-export --stacks
    run_tool "$1" trace-export --stacks --compat torch
    run_tool "$1" trace-export --stacks --stack-source tree --metric self_gpu
    run_tool "$1" trace-export --flamegraph
    run_tool "$1" trace-export --chrome
    run_tool "$1" trace-export --html
}

# expect_bad FILE WORD: the file is refused as bad input, the message says WORD
expect_bad() {
    for tool in trace-analyze "trace-export --stacks" "trace-export --chrome"; do
        # shellcheck disable=SC2086
        run_tool "$1" $tool
        [ "$rc" = 3 ] || fail "$tool on $(basename "$1"): exit $rc, expected 3"
        grep -q -- "$2" "$TMP/err" || fail "$tool on $(basename "$1"): '$2' not in: $(cat "$TMP/err")"
    done
}

every_tool "$base"
expect_eq "$rc" 0 "the base run.db"

# ---- recursion: parent loops and self-parents, among GPU events and on the host
variant gpu-self-parent "UPDATE events SET parent_id = id WHERE id IN $gpu"
variant gpu-loop "UPDATE events SET parent_id = (SELECT max(id) FROM $gpu) WHERE id = (SELECT min(id) FROM $gpu);
  UPDATE events SET parent_id = (SELECT min(id) FROM $gpu) WHERE id = (SELECT max(id) FROM $gpu)"
variant host-loop "UPDATE events SET parent_id = (SELECT max(id) FROM events WHERE kind = (SELECT id FROM kinds WHERE name = 'runtime'))
  WHERE parent_id IS NULL"
for v in gpu-self-parent gpu-loop host-loop; do every_tool "in/$v.db"; done
# trace-export walks parents for stacks: a cycle is bad input (trace-analyze, and
# --chrome without a stack filter, follow no chain)
for v in gpu-self-parent gpu-loop; do
    for tool in "trace-export --stacks" "trace-export --flamegraph" "trace-export --chrome --include ."; do
        # shellcheck disable=SC2086
        run_tool "in/$v.db" $tool
        expect_eq "$rc" 3 "$tool on $v.db"
        expect_grep 'events: parent_id has a cycle' "$TMP/err"
    done
done

# trace-analyze follows the chain of host events for --group-by-stack on the tree: a
# loop among them is bad input there too (docs/schema.md)
run_tool in/host-loop.db trace-analyze --group-by-stack 2 --stack-source tree
expect_eq "$rc" 3 "analyze --group-by-stack --stack-source tree on host-loop.db"
expect_grep 'events: parent_id has a cycle' "$TMP/err"

# ---- stack_nodes: a cycle, a self-parent, a 10^6-deep chain, sparse ids
variant stack-cycle "UPDATE stack_nodes SET parent_id = (SELECT max(id) FROM stack_nodes) WHERE parent_id IS NULL"
variant stack-self "UPDATE stack_nodes SET parent_id = id WHERE id = (SELECT max(id) FROM stack_nodes)"
for v in stack-cycle stack-self; do
    every_tool "in/$v.db"
    run_tool "in/$v.db" trace-analyze --group-by-stack 3
    expect_eq "$rc" 3 "analyze --group-by-stack on $v.db"
    expect_grep 'stack_nodes: parent_id has a cycle' "$TMP/err"
    run_tool "in/$v.db" trace-export --stacks --stack-source frames
    expect_eq "$rc" 3 "export --stacks on $v.db"
done
variant stack-sparse "INSERT INTO stack_nodes(id, parent_id, frame_id) VALUES (4294967295, NULL, 1),
  (4294967290, 4294967295, 1), (-9223372036854775808, 4294967290, 1);
  UPDATE events SET stack_id = -9223372036854775808 WHERE id = 1"
variant stack-sparse-max "INSERT INTO stack_nodes(id, parent_id, frame_id) VALUES (9223372036854775807, NULL, 1),
  (-1, 9223372036854775807, 1); UPDATE events SET stack_id = -1"
every_tool in/stack-sparse.db
every_tool in/stack-sparse-max.db
# device numbers at the ends of int64: the chrome export moves GPUs past the host pids
variant device-max "UPDATE devices SET device = 9223372036854775807"
variant device-min "UPDATE devices SET device = -9223372036854775808"
every_tool in/device-max.db
every_tool in/device-min.db
# 20,000 devices with a stream and a kernel each: the reports' device tables must not
# take time in their square (the summary took 14 s, past the timeout)
variant many-devices "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
  INSERT INTO devices(id, source_id, device) SELECT 1000 + i, 1, 1000 + i FROM n;
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
  INSERT INTO streams(id, device_id, stream) SELECT 1000 + i, 1000 + i, 7 FROM n;
  WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
  INSERT INTO events(id, kind, name_id, start_ns, end_ns, stream_id, depth, flags, cpu_total_ns, cpu_self_ns,
                     gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self)
  SELECT 1000 + i, (SELECT id FROM kinds WHERE name = 'kernel'), 1, 100 + i, 101 + i, 1000 + i, 0, 0, 0, 0,
         1, 1, 0, 0, 0, 0 FROM n"
every_tool in/many-devices.db
# a 20 MB name under several stacks: read once, cut in every output (no line of
# folded stacks holds 20 MB once per frame, no slice name is 20 MB)
variant long-name "UPDATE strings SET value = printf('%.*c', 20000000, 'A') WHERE id IN
  (SELECT name_id FROM events WHERE kind = (SELECT id FROM kinds WHERE name = 'runtime'))"
every_tool in/long-name.db
for x in "--stacks" "--stacks --stack-source tree" "--chrome" "--flamegraph"; do
    # shellcheck disable=SC2086
    run_tool in/long-name.db trace-export $x
    expect_eq "$rc" 0 "export $x of a 20 MB name"
    [ "$(wc -c <"$TMP/out.x")" -lt 1000000 ] || fail "export $x of a 20 MB name wrote $(wc -c <"$TMP/out.x") bytes"
done
run_tool in/many-devices.db trace-analyze --report summary,kernels,ranks
expect_eq "$rc" 0 "the reports on 20,000 devices"
# an array as long as the largest id would need 64 GB: give the tools 2 GB of address space
# (not under ASan, which reserves terabytes for its shadow)
if ! grep -qa __asan_init "$BIN/trace-analyze"; then
    (ulimit -v 2000000; run_tool in/stack-sparse.db trace-analyze --group-by-stack 5; exit $rc)
    expect_eq "$?" 0 "analyze --group-by-stack on sparse stack ids under a 2 GB limit"
    (ulimit -v 2000000; run_tool in/stack-sparse.db trace-export --stacks; exit $rc)
    expect_eq "$?" 0 "export --stacks on sparse stack ids under a 2 GB limit"
fi
variant stack-deep "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000000)
  INSERT INTO stack_nodes(id, parent_id, frame_id) SELECT 1000 + i, CASE WHEN i > 1 THEN 999 + i END, 1 FROM c;
  UPDATE events SET stack_id = 1001000 WHERE id IN (SELECT min(id) FROM events)"
T=${HOSTILE_DEEP_TIMEOUT:-60}   # a million frames is real work, most of all under ASan
for args in "trace-export --stacks" "trace-export --stacks --compat torch" "trace-analyze --group-by-stack 4"; do
    # shellcheck disable=SC2086
    run_tool in/stack-deep.db $args
    expect_eq "$rc" 0 "$args on a 10^6-deep stack"
done
# 10^5 nested events: folded lines would repeat 5*10^9 frames; the other outputs stay linear
cpu_kind=$(q "$base" "SELECT kind FROM events WHERE thread_id IS NOT NULL LIMIT 1")
variant events-deep "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
  INSERT INTO events(id, kind, name_id, start_ns, end_ns, thread_id, parent_id, depth, flags, cpu_total_ns,
    cpu_self_ns, gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self)
  SELECT 1000 + i, $cpu_kind, 1, 100000 + i, 1000000 - i, 1, CASE WHEN i > 1 THEN 999 + i END, i, 0,
    1000000 - 2 * i, 1, 0, 0, 0, 0, 0, 0 FROM c"
run_tool in/events-deep.db trace-export --stacks
expect_eq "$rc" 3 "folded stacks of 10^5 nested events"
expect_grep 'too many for this format' "$TMP/err"
for args in "trace-export --flamegraph" "trace-export --chrome" "trace-analyze --group-by-stack 3"; do
    # shellcheck disable=SC2086
    run_tool in/events-deep.db $args
    expect_eq "$rc" 0 "$args on 10^5 nested events"
done
rm -f in/events-deep.db
# the query time limit stops a query that runs too long (here: every query)
TRACEKIT_QUERY_TIMEOUT=0.000001; export TRACEKIT_QUERY_TIMEOUT
run_tool in/stack-deep.db trace-analyze --group-by-stack 4
unset TRACEKIT_QUERY_TIMEOUT
expect_eq "$rc" 3 "a query past the time limit"
expect_grep 'interrupt' "$TMP/err"
T=${HOSTILE_TIMEOUT:-10}
rm -f in/stack-deep.db

# ---- schema objects: views, recursive views, triggers, generated columns, versions
for t in kinds threads strings stack_nodes events streams processes; do
    variant "view-$t" "ALTER TABLE $t RENAME TO ${t}_t; CREATE VIEW $t AS SELECT * FROM ${t}_t"
    expect_bad "in/view-$t.db" "$t is a view"
done
variant view-recursive "DROP TABLE kinds; CREATE VIEW kinds AS WITH RECURSIVE r(id) AS
  (SELECT 1 UNION ALL SELECT id + 1 FROM r) SELECT id, 'k' || id AS name, 0 AS on_gpu FROM r"
expect_bad in/view-recursive.db 'kinds is a view'
variant view-recursive-strings "DROP TABLE strings; CREATE VIEW strings(id, value) AS WITH RECURSIVE r(id, value) AS
  (SELECT 1, 'x' UNION ALL SELECT id + 1, value || value FROM r) SELECT * FROM r"
expect_bad in/view-recursive-strings.db 'strings is a view'
every_tool in/view-recursive-strings.db
variant missing-table "DROP TABLE stack_nodes"
expect_bad in/missing-table.db 'stack_nodes is missing'
variant missing-column "ALTER TABLE events DROP COLUMN stack_id"
expect_bad in/missing-column.db 'no column stack_id'
# every event's name and source's path is a string: an emptied strings table is damage,
# never a table of blank names
variant strings-emptied "DELETE FROM strings"
expect_bad in/strings-emptied.db 'strings table is empty'
# (the views read strings.value: SQLite refuses to drop a column a view uses)
variant generated "DROP VIEW ops; DROP VIEW kernel_launches; DROP VIEW steps;
    ALTER TABLE strings DROP COLUMN value; ALTER TABLE strings ADD COLUMN value AS (zeroblob(100000000)) VIRTUAL"
expect_bad in/generated.db 'generated column'
variant virtual-table "DROP TABLE kinds; CREATE VIRTUAL TABLE kinds USING fts4(id, name, on_gpu)"
expect_bad in/virtual-table.db 'kinds is'
# a WAL-mode file (or a stray journal) is read as it is: no -wal or -shm made beside it
variant wal "PRAGMA journal_mode=WAL" >/dev/null
every_tool in/wal.db
expect_eq "$rc" 0 "a WAL-mode run.db"
variant journal "SELECT 1" >/dev/null
printf 'not a journal' >in/journal.db-journal
every_tool in/journal.db
expect_eq "$rc" 0 "a run.db beside a stray journal"
# triggers do not run on read: the file is read as it is
variant trigger "CREATE TRIGGER t AFTER INSERT ON events BEGIN DELETE FROM strings; END;
  CREATE TABLE other(x); CREATE TRIGGER t2 BEFORE DELETE ON other BEGIN SELECT 1; END"
every_tool in/trigger.db
expect_eq "$rc" 0 "a run.db with triggers"
for ver in 0 2 -1; do
    variant "version$ver" "PRAGMA user_version = $ver"
    expect_bad "in/version$ver.db" 'schema version'
done

# ---- special files given as run.db: refused at once, never a blocked read
mkfifo in/fifo.db
mkdir in/dir.db
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' in/sock.db 2>/dev/null
for f in in/fifo.db in/dir.db in/sock.db /dev/null /dev/zero; do
    [ -e "$f" ] || continue
    every_tool "$f"
    expect_eq "$rc" 3 "$f given as a run.db"
done
expect_bad in/fifo.db 'FIFO'
expect_bad in/dir.db 'directory'
expect_bad /dev/zero 'device'

# ---- extreme values: times near the int64 limits, ends before starts, huge totals
variant extreme "UPDATE events SET start_ns = -9223372036854775808, end_ns = 9223372036854775807 WHERE id = 1;
  UPDATE events SET end_ns = start_ns - 1000 WHERE id = 2;
  UPDATE events SET start_ns = 9223372036854775000, end_ns = 9223372036854775807 WHERE id = 3;
  UPDATE events SET cpu_total_ns = 9223372036854775807, cpu_self_ns = 9223372036854775807,
    gpu_self_ns = 9223372036854775807, gpu_total_ns = 9223372036854775807 WHERE id IN (4, 5)"
every_tool in/extreme.db
for tool in trace-analyze "trace-export --stacks" "trace-export --chrome"; do
    # shellcheck disable=SC2086
    run_tool in/extreme.db $tool
    expect_eq "$rc" 0 "$tool on extreme times"
    expect_grep '5 event(s) with impossible times' "$TMP/err"
done
# hostile aggregates: absurd sums, negative counts, NULLs, a view in their place
cp "$base" in/agg-extreme.db && q in/agg-extreme.db "UPDATE aggregates SET events = -5,
  cpu_total_ns = 9223372036854775807, cpu_self_ns = -9223372036854775808, gpu_self_ns = 9223372036854775807,
  first_start_ns = 9223372036854775807, shape_id = 4294967295, name_id = 999999" || fail "agg-extreme.db"
TR_AGGREGATES_MIN=0 run_tool in/agg-extreme.db trace-analyze --format csv
expect_eq "$rc" 0 "analyze on hostile aggregates"
cp "$base" in/agg-null.db && q in/agg-null.db "CREATE TABLE a2 AS SELECT * FROM aggregates; DROP TABLE aggregates;
  CREATE TABLE aggregates(name_id, on_gpu, shape_id, events, cpu_total_ns, cpu_self_ns, gpu_total_ns,
  gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self, flops, first_start_ns,
  first_end_ns, first_id, first_async); INSERT INTO aggregates SELECT NULL, 'x', NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, 'y', NULL, NULL, NULL, NULL FROM a2" || fail "agg-null.db"
TR_AGGREGATES_MIN=0 every_tool in/agg-null.db
cp "$base" in/agg-view.db && q in/agg-view.db "DROP TABLE aggregates; CREATE VIEW aggregates AS
  WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT * FROM r" || fail "agg-view.db"
every_tool in/agg-view.db

# legal values whose sums overflow int64 saturate instead of wrapping negative
variant big-sums "UPDATE events SET cpu_self_ns = 4611686018427387903, cpu_total_ns = 4611686018427387903,
  start_ns = 0, end_ns = 4611686018427387903"
run_tool in/big-sums.db trace-analyze --format csv
expect_eq "$rc" 0 "analyze on huge totals"
grep -q -- ',-[0-9]' "$TMP/out" && fail "a total wrapped negative: $(grep -- ',-[0-9]' "$TMP/out" | head -2)"
run_tool in/big-sums.db trace-export --stacks --metric cpu_total
grep -q -- ' -[0-9]' "$TMP/out.x" 2>/dev/null && fail "a folded value wrapped negative"
true
