# Past 65,536 events the events table is written in two halves on two threads,
# and SQLite numbers the events and strings rows itself (lib/bulk_insert.h):
# the ids must still be 1..n in the order of the events, on both sides of the
# seam, so that the detail tables (written with their keys) and the tree's
# links name the right rows.
"$BIN/gen-nvprof" -n 100000 -o w.nvvp || fail "gen-nvprof"
expect_status 0 "$BIN/trace-ingest" -q -o w.db w.nvvp
n=$(q w.db 'SELECT count(*) FROM events')
[ "$n" -gt 65536 ] || fail "only $n events: one thread writes them"
expect_eq "$(q w.db 'SELECT min(id), max(id) FROM events')" "1|$n" "event ids"
expect_eq "$(q w.db 'SELECT min(id), max(id) = count(*) FROM strings')" "1|1" "string ids"
expect_eq "$(q w.db 'SELECT count(*) FROM kernels k JOIN events e ON e.id = k.event_id WHERE e.kind != 7')" 0 \
    "kernel rows on other events"
expect_eq "$(q w.db 'SELECT count(*) FROM api_calls a JOIN events e ON e.id = a.event_id WHERE e.kind NOT IN (4, 5)')" 0 \
    "API call rows on other events"
# every kernel hangs off the call with its correlation, on both sides of the seam
expect_eq "$(q w.db "SELECT count(*) FROM events k LEFT JOIN events a ON a.id = k.parent_id
                     WHERE k.kind = 7 AND (a.id IS NULL OR a.correlation IS NOT k.correlation)")" 0 \
    "kernels not under their launching call"
expect_eq "$(q w.db "SELECT count(*) FROM events WHERE kind = 7 AND id > $n / 2")" \
    "$(q w.db "SELECT count(*) FROM kernels WHERE event_id > $n / 2")" "kernels after the seam"
