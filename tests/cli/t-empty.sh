# A real nvprof database in which profiling never started: ingests, says so.
need_traces || return 0
expect_status 0 "$BIN/trace-ingest" -o empty.db "$TRACES/nvprof/profiling-lm__net-1b3eead_EMPTY.sql"
expect_grep 'no events' "$TMP/err"
expect_eq "$(q empty.db 'SELECT count(*) FROM events')" 0 "events"
expect_eq "$(q empty.db 'PRAGMA user_version')" 1 "schema version"
expect_status 0 "$BIN/trace-analyze" empty.db
expect_grep 'no events' "$TMP/err"
