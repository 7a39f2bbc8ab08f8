#!/bin/sh
# Regenerates the seed corpora of the run.db, nsys and btree_read fuzz targets:
#   tests/fuzz/make-seeds.sh BIN   (BIN: a directory holding trace-ingest)
# run.db seeds are small run.dbs made by trace-ingest from the other targets'
# seeds, shrunk to 512-byte pages, plus a few hostile variants; nsys seeds are
# tiny hand-made exports in the Nsight Systems schema; btree_read seeds are
# small files made with sqlite3 in the page layouts lib/btree_read decodes.
set -eu
BIN=${1:?usage: make-seeds.sh BIN}
C=$(dirname "$0")/corpus
R=$C/rundb
mkdir -p "$R" "$C/nsys" "$C/rundb_sql"
shrink() { sqlite3 "$1" "PRAGMA page_size=512; VACUUM;"; }
"$BIN/trace-ingest" -q -o "$R/kineto-basic.db" "$C/kineto/basic.json"
"$BIN/trace-ingest" -q -o "$R/kineto-python.db" "$C/kineto/python_memory.json"
"$BIN/trace-ingest" -q -o "$R/kineto-strings.db" "$C/kineto/strings.json"
"$BIN/trace-ingest" -q -o "$R/nvprof-tiny.db" "$C/nvprof/tiny.nvvp"
for f in "$R"/*.db; do shrink "$f"; done
v() { cp "$R/kineto-python.db" "$R/$1.db"; sqlite3 "$R/$1.db" "$2"; shrink "$R/$1.db"; }
v self-parent "UPDATE events SET parent_id = id WHERE kind IN (SELECT id FROM kinds WHERE on_gpu)"
v stack-cycle "UPDATE stack_nodes SET parent_id = (SELECT max(id) FROM stack_nodes) WHERE id = (SELECT min(id) FROM stack_nodes)"
v stack-chain "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000)
  INSERT INTO stack_nodes(id, parent_id, frame_id) SELECT 4294967295 + i,
  CASE WHEN i > 1 THEN 4294967294 + i END, 1 FROM c; UPDATE events SET stack_id = 4294969295 WHERE id = 1"
v view "ALTER TABLE kinds RENAME TO k; CREATE VIEW kinds AS SELECT * FROM k"
v extreme-times "UPDATE events SET start_ns = -9223372036854775808, end_ns = 9223372036854775807 WHERE id = 1;
  UPDATE events SET end_ns = start_ns - 1 WHERE id = 2"

N=$C/nsys
G() { echo "(($1 << 24) | $2)"; }
rm -f "$N/basic.sqlite" "$N/nvtx-only.sqlite"
sqlite3 "$N/basic.sqlite" "PRAGMA page_size=512;
create table StringIds(id integer primary key, value text);
insert into StringIds values (10, 'from id'), (11, 'cudaMemcpyAsync_v3020'), (12, 'kern'), (13, 'worker'), (14, 'cudaLaunchKernel_v7000');
create table NVTX_EVENTS(start integer, end integer, eventType integer, rangeId integer, text text, globalTid integer, endGlobalTid integer, textId integer, domainId integer);
insert into NVTX_EVENTS values (10, 90, 60, 1, null, $(G 100 101), $(G 100 102), 10, 0),
 (20, 30, 59, null, 'conv, seq = 4, sizes = [[1, 3]]', $(G 100 101), null, null, 0),
 (40, null, 34, null, 'tick', $(G 100 101), null, null, 0);
create table CUPTI_ACTIVITY_KIND_RUNTIME(start integer, end integer, eventClass integer, globalTid integer, correlationId integer, nameId integer, returnValue integer, callchainId integer);
insert into CUPTI_ACTIVITY_KIND_RUNTIME values (21, 25, 0, $(G 100 101), 5, 11, 0, null), (26, 28, 0, $(G 100 101), 6, 14, 0, null);
create table CUPTI_ACTIVITY_KIND_MEMCPY(start integer, end integer, deviceId integer, contextId integer, streamId integer, correlationId integer, bytes integer, copyKind integer, srcKind integer, dstKind integer);
insert into CUPTI_ACTIVITY_KIND_MEMCPY values (50, 60, 1, 1, 13, 5, 4096, 1, 0, 2);
create table CUPTI_ACTIVITY_KIND_MEMSET(start integer, end integer, deviceId integer, contextId integer, streamId integer, correlationId integer, bytes integer, value integer);
insert into CUPTI_ACTIVITY_KIND_MEMSET values (61, 62, 1, 1, 13, 7, 64, 0);
create table CUPTI_ACTIVITY_KIND_KERNEL(start integer, end integer, deviceId integer, contextId integer, streamId integer, correlationId integer, demangledName integer, shortName integer, mangledName integer, gridX integer, gridY integer, gridZ integer, blockX integer, blockY integer, blockZ integer, registersPerThread integer, staticSharedMemory integer, dynamicSharedMemory integer);
insert into CUPTI_ACTIVITY_KIND_KERNEL values (63, 70, 1, 1, 13, 6, 12, 12, 12, 1, 1, 1, 32, 1, 1, 16, 0, 0);
create table ThreadNames(nameId integer, priority integer, globalTid integer);
insert into ThreadNames values (13, 0, $(G 100 101));"
sqlite3 "$N/nvtx-only.sqlite" "PRAGMA page_size=512;
create table StringIds(id integer primary key, value text);
create table NVTX_EVENTS(start integer, end integer, eventType integer, rangeId integer, text text, globalTid integer, endGlobalTid integer, textId integer, domainId integer);
insert into NVTX_EVENTS values (1, 9, 59, null, 'outer', $(G 1 1), null, null, 0), (2, 3, 59, null, 'inner', $(G 1 1), null, null, 0);"

# btree_read seeds: small files whose tables the page reader takes, in the
# layouts it must decode (overflow chains, two levels, reserved bytes, rows
# older than ALTER TABLE, freeblocks), and one UTF-16 file it refuses.
B=$C/btree_read
mkdir -p "$B"
rm -f "$B"/*.db
sqlite3 "$B/values.db" "PRAGMA page_size=512;
create table t(id integer primary key, a integer, b text, c blob, d);
insert into t values (-9223372036854775808, 0, '', x'', 1.5), (-1, 1, 'x', x'00ff', -0.0),
 (0, -1, 'abc', null, 1e300), (5, 127, null, x'0102030405', 'text'), (6, 128, 'long text value', x'', 2.0),
 (7, 32767, '  42xyz', x'41', null), (8, 8388608, '-7', null, 7), (9, 2147483648, '0009', x'ff', -1e-300),
 (10, 140737488355328, 'é', null, 0), (11, -9223372036854775808, null, null, 1),
 (9223372036854775807, 9223372036854775807, 'max', x'7f', 0.1);
create table g(x, y);
insert into g(rowid, x, y) values (3, 'three', 3), (1000000, null, x'beef'), (4294967296, 2.5, 'big');"
sqlite3 "$B/overflow.db" "PRAGMA page_size=512;
create table o(id integer primary key, s text, b blob);
insert into o values (1, printf('%.*c', 1200, 'a'), cast(printf('%.*c', 700, 'z') as blob)), (2, printf('%.*c', 477, 'b'), null),
 (3, printf('%.*c', 472, 'c'), null), (4, 'short', zeroblob(1000)), (5, printf('%.*c', 473, 'd'), null);"
sqlite3 "$B/two-levels.db" "PRAGMA page_size=512;
create table t(id integer primary key, v integer, s text);
with recursive c(i) as (select 1 union all select i + 1 from c where i < 120)
 insert into t select i * 3, i * i - 500, substr('abcdefghijklmnop', 1, i % 17) from c;
delete from t where id % 9 = 0; update t set s = s || s where id % 5 = 1;"
printf 'PRAGMA page_size=512;\n.filectrl reserve_bytes 32\n%s\n' "create table al(a integer, b text);
insert into al values (1, 'one'), (2, 'two'), (3, null);
alter table al add column c; alter table al add column d text;
insert into al values (4, 'four', 44, 'dd'), (5, null, x'05', null);" | sqlite3 "$B/reserved-altered.db" >/dev/null
sqlite3 "$B/utf16.db" "PRAGMA encoding='UTF-16le'; PRAGMA page_size=512;
create table t(a integer, b text); insert into t values (1, 'one'), (2, 'two');"
