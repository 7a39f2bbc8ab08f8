# The events table and its index events_parent are written as b-tree pages
# appended to the file (lib/btree_append.h), not through SQLite: the file must
# pass SQLite's own integrity check, the index must give what a scan gives,
# the ids must be 1..n in the order of the events so that the detail tables
# and the tree's links name the right rows, and SQLite must be able to write
# on after it.  Held to a small memory limit (the arrays in files), or with
# the index built in place, the database is the same.
"$BIN/gen-nvprof" -n 100000 -o w.nvvp || fail "gen-nvprof"
expect_status 0 "$BIN/trace-ingest" -q -o w.db w.nvvp
n=$(q w.db 'SELECT count(*) FROM events')
[ "$n" -gt 100000 ] || fail "only $n events"
expect_eq "$(q w.db 'PRAGMA integrity_check')" "ok" "integrity check"
expect_eq "$(q w.db 'SELECT min(id), max(id) FROM events')" "1|$n" "event ids"
expect_eq "$(q w.db 'SELECT min(id), max(id) = count(*) FROM strings')" "1|1" "string ids"
expect_eq "$(q w.db 'SELECT count(*) FROM kernels k JOIN events e ON e.id = k.event_id WHERE e.kind != 7')" 0 \
    "kernel rows on other events"
expect_eq "$(q w.db 'SELECT count(*) FROM api_calls a JOIN events e ON e.id = a.event_id WHERE e.kind NOT IN (4, 5)')" 0 \
    "API call rows on other events"
# every kernel hangs off the call with its correlation
expect_eq "$(q w.db "SELECT count(*) FROM events k LEFT JOIN events a ON a.id = k.parent_id
                     WHERE k.kind = 7 AND (a.id IS NULL OR a.correlation IS NOT k.correlation)")" 0 \
    "kernels not under their launching call"
# the index: its order and its lookups are the table's
by_index=$(q w.db 'SELECT sum(id * (rn % 1000)) FROM (SELECT id, row_number() OVER () AS rn
                   FROM (SELECT id FROM events INDEXED BY events_parent ORDER BY parent_id, id))')
by_scan=$(q w.db 'SELECT sum(id * (rn % 1000)) FROM (SELECT id, row_number() OVER () AS rn
                  FROM (SELECT id FROM events NOT INDEXED ORDER BY parent_id, id))')
expect_eq "$by_index" "$by_scan" "events_parent's order"
expect_eq "$(q w.db 'SELECT count(*) FROM events p WHERE (SELECT count(*) FROM events c INDEXED BY events_parent
                     WHERE c.parent_id = p.id) != (SELECT count(*) FROM events c NOT INDEXED
                     WHERE c.parent_id = p.id) AND p.id % 997 = 0')" 0 "children found through the index"
# the same database held to a small limit, and SQLite writing on after
expect_status 0 "$BIN/trace-ingest" -q --max-memory 24M -o small.db w.nvvp
expect_eq "$(sqlite3 small.db .dump | md5sum)" "$(sqlite3 w.db .dump | md5sum)" "held to 24 MiB"
# events_parent is built beside the events, apart, in an unnamed file of the
# spill directory, then appended; where no such file can be made, in place
# after them: the same bytes either way, and nothing left in the directory
mkdir spill
expect_status 0 env TRACEKIT_SPILL_DIR="$PWD/spill" "$BIN/trace-ingest" -q -o apart.db w.nvvp
expect_status 0 env TRACEKIT_SPILL_DIR="$PWD/no-such-dir" "$BIN/trace-ingest" -q -o in-place.db w.nvvp
cmp -s apart.db w.db || fail "events_parent built apart: other bytes"
cmp -s in-place.db w.db || fail "events_parent built in place: other bytes"
expect_eq "$(ls -A spill)" "" "files left in the spill directory"
sqlite3 w.db "INSERT INTO events(kind, name_id, start_ns, end_ns, parent_id, depth, flags, cpu_total_ns,
              cpu_self_ns, gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total,
              gpu_mem_self) SELECT kind, name_id, start_ns, end_ns, 7, depth, flags, 0, 0, 0, 0, 0, 0, 0, 0
              FROM events WHERE id % 10 = 0; DELETE FROM events WHERE id % 7 = 0" || fail "SQLite writing on"
expect_eq "$(q w.db 'PRAGMA integrity_check')" "ok" "integrity check after SQLite wrote on"
