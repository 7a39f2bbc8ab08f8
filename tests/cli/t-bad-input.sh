# Bad input: one line on stderr naming the file, exit 3, no output left behind.
bad() { # NAME FILE
    expect_status 3 "$BIN/trace-ingest" -o "$TMP/out.db" "$2"
    expect_one_line_error
    grep -qF "$(basename "$2")" "$TMP/err" || fail "$1: message does not name the file: $(cat "$TMP/err")"
    expect_no_file "$TMP/out.db"
}
printf 'hello, not a trace\n' > notsqlite.nvvp
bad "text file" notsqlite.nvvp
: > empty.nvvp
bad "empty file" empty.nvvp
bad "missing file" "$TMP/does-not-exist.nvvp"
mkdir adir
bad "directory" adir
sqlite3 other.sqlite "CREATE TABLE t(a); INSERT INTO t VALUES(1);"
bad "SQLite, not nvprof" other.sqlite
expect_grep 'SQLite' "$TMP/err"
# an nvprof-looking file whose MARKER table lacks a column
sqlite3 oddcols.nvvp "CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT);
  CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, flags INT, id INT, objectKind INT, objectId BLOB, name INT);
  INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES(1, 2, 1, 2, x'0100000002000000', 0);"
bad "missing column" oddcols.nvvp
expect_grep 'table=CUPTI_ACTIVITY_KIND_MARKER' "$TMP/err"
expect_grep "timestamp" "$TMP/err"
# an existing run.db is not touched by a failed ingest
echo keep > keep.db
expect_status 3 "$BIN/trace-ingest" -o keep.db notsqlite.nvvp
expect_eq "$(cat keep.db)" "keep" "existing output overwritten on failure"
# truncated real database
if [ -n "$TRACES" ]; then
    head -c 60000 "$TRACES/nvprof/profiling-lm__net-17ed9e2.sql" > truncated.sql
    bad "truncated" truncated.sql
fi
# usage errors exit 2
expect_status 2 "$BIN/trace-ingest"
expect_status 2 "$BIN/trace-ingest" --format nosuch x
expect_status 2 "$BIN/trace-analyze"
expect_status 2 "$BIN/trace-analyze" --sort nosuch x.db
expect_grep 'self_cpu_time_total' "$TMP/err"
# trace-analyze on bad run databases
expect_status 3 "$BIN/trace-analyze" notsqlite.nvvp
expect_one_line_error
expect_status 3 "$BIN/trace-analyze" other.sqlite
expect_one_line_error
# a run.db from a newer schema is refused, naming both versions
sqlite3 newer.db "CREATE TABLE events(id); PRAGMA user_version=99;"
expect_status 3 "$BIN/trace-analyze" newer.db
expect_one_line_error
expect_grep '99' "$TMP/err"

# a file of no known format says what each reader saw
printf 'hello\n' > notrace.txt
expect_status 3 "$BIN/trace-ingest" -q -o nt.db notrace.txt
expect_one_line_error
expect_grep "tried nvprof and nsys (not an SQLite file), kineto (not JSON: it starts with 'h'), raw (no trace-record header)" "$TMP/err"
printf '{"x": 1}' > other.txt
expect_status 3 "$BIN/trace-ingest" -q -o nt.db other.txt
expect_grep "kineto (JSON naming no traceEvents" "$TMP/err"
printf '  \n\t\n' > blank.json
expect_status 3 "$BIN/trace-ingest" -q -o nt.db blank.json
expect_grep "kineto (only white space in its first 5 bytes)" "$TMP/err"
# an SQLite file cut short, at ingest (whether or not a reader recognised its first pages)
# and given to trace-analyze as a run.db
"$BIN/gen-nvprof" -n 2000 -o whole.nvvp >/dev/null 2>&1 || fail "gen-nvprof"
for n in 60 4096 50000; do
    head -c $n whole.nvvp > cut$n.nvvp
    bad "nvprof cut at $n" cut$n.nvvp
    expect_grep "cut short" "$TMP/err"
done
expect_status 0 "$BIN/trace-ingest" -q -o whole.db whole.nvvp
head -c 40000 whole.db > cut.db
expect_status 3 "$BIN/trace-analyze" cut.db
expect_one_line_error
expect_grep "cut.db: the run database is cut short" "$TMP/err"
