# trace-ingest's summary (sources, events per kind, span, threads, warnings
# grouped, run.db size), its progress line (a terminal, or TR_PROGRESS=1; never
# with -q or when stderr is a file) and '-' as standard input.
S=$root/sample-traces/lm-step.nvvp
unset TR_PROGRESS

# kinds_of FILE: the summary's "events" line as sorted "kind|count" lines
kinds_of() {
    sed -n 's/^  events    //p' "$1" | tr -d ',' | sed 's/\([a-z_]*\) \([0-9]*\) */\1|\2\n/g' \
        | grep . | sort
}
kinds_in_db() {
    q "$1" "SELECT k.name || '|' || count(*) FROM events e JOIN kinds k ON k.id = e.kind GROUP BY e.kind" | sort
}

# two Kineto files, each with a linked kernel, an unlinked one, two events of an
# unknown category and one without a time: the warnings group across files
kineto() {
    cat <<'EOF'
{"schemaVersion": 1, "traceEvents": [
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 11, "ts": 100, "dur": 50},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 110, "dur": 5, "args": {"correlation": 7}},
 {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": 30, "args": {"correlation": 7, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "orphan", "pid": 0, "tid": 7, "ts": 160, "dur": 10, "args": {"correlation": 99, "device": 0, "stream": 7}},
 {"ph": "X", "cat": "mystery", "name": "m1", "pid": 10, "tid": 11, "ts": 120, "dur": 1},
 {"ph": "X", "cat": "mystery", "name": "m2", "pid": 10, "tid": 11, "ts": 120, "dur": 1},
 {"ph": "X", "cat": "cpu_op", "name": "no time", "pid": 10, "tid": 11, "dur": 1}
]}
EOF
}
kineto >k1.json
kineto >k2.json
expect_status 0 "$BIN/trace-ingest" -o k.db k1.json k2.json
cp "$TMP/err" k.err
expect_grep '^trace-ingest: k\.db: 8 events from 2 file(s), [0-9.]* [KM]B in [0-9.]* s$' k.err
expect_grep '^  source    k1\.json: kineto schema 1, 4 events, span 70\.000us$' k.err
expect_grep '^  source    k2\.json: kineto schema 1, 4 events, span 70\.000us$' k.err
expect_eq "$(kinds_of k.err)" "$(kinds_in_db k.db)" "events per kind in the summary and in run.db"
expect_eq "$(kinds_of k.err | wc -l)" 3 "kinds listed"
expect_grep '^  threads   2 in 2 process(es); 2 stream(s) on 2 device(s)$' k.err
# threads_line DB: the line as run.db's own tables count them
threads_line() {
    q "$1" "SELECT '  threads   ' || (SELECT count(*) FROM threads) || ' in ' || (SELECT count(*) FROM processes)
            || ' process(es); ' || (SELECT count(*) FROM streams) || ' stream(s) on '
            || (SELECT count(*) FROM devices) || ' device(s)'"
}
expect_eq "$(grep '^  threads' k.err)" "$(threads_line k.db)" "threads, processes, streams, devices"
expect_grep '^  unlinked  2 of 4 GPU activities have no launching call: 2 whose correlation id no API call has$' k.err
# every warning is printed as it comes, then counted in groups with the numbers summed
expect_eq "$(grep -c '^trace-ingest: warning: ' k.err)" 4 "warnings printed"
expect_grep '^  warnings  4 of 2 kinds (above)$' k.err
expect_grep "^    4 event(s) of unknown category skipped (first: 'mystery'), in 2 warnings\$" k.err
expect_grep '^    2 event(s) without a usable ts skipped, in 2 warnings$' k.err
expect_eq "$(wc -l <k.err)" 13 "lines on stderr (4 warnings, then the summary)"
# the size is the run database's
size=$(stat -c %s k.db)
kb=$(awk -v s="$size" 'BEGIN { printf "%.1f KB", s / 1000 }')
expect_grep "events from 2 file(s), $kb in" k.err

# an nvprof database: its format and schema version, and counts equal to run.db's
expect_status 0 "$BIN/trace-ingest" -o s.db "$S"
cp "$TMP/err" s.err
expect_grep "^  source    .*lm-step\.nvvp: nvprof 12, 1,537 events, span 8\.263ms\$" s.err
expect_eq "$(kinds_of s.err)" "$(kinds_in_db s.db)" "nvprof events per kind"
expect_eq "$(kinds_of s.err | wc -l)" 9 "nvprof kinds listed"
expect_eq "$(grep '^  threads' s.err)" "$(threads_line s.db)" "nvprof threads and streams"
expect_no_grep 'warnings' s.err
expect_no_grep "$(printf '\r')" s.err

# -q: nothing at all, even with the progress line forced and warnings to give
expect_status 0 env TR_PROGRESS=1 "$BIN/trace-ingest" -q -o q.db k1.json "$S"
expect_eq "$(wc -c <"$TMP/err")" 0 "bytes on stderr with -q"
expect_eq "$(kinds_in_db q.db | wc -l)" 9 "-q still ingests"

# the progress line: a run long enough for a few redraws
"$BIN/gen-nvprof" -n 60000 -o big.nvvp || fail "gen-nvprof"
expect_status 0 env TR_PROGRESS=1 "$BIN/trace-ingest" -o big.db big.nvvp
cp "$TMP/err" p.err
tr '\r' '\n' <p.err >p.lines
expect_grep '^trace-ingest: reading big\.nvvp: [0-9,]* events' p.lines
# cleared before the summary: the last redraw is overwritten with spaces, and the
# summary starts at the beginning of a line of its own
cr=$(printf '\r')
expect_grep "$cr *${cr}trace-ingest: big\.db: 60,001 events from 1 file(s)" p.err
expect_eq "$(grep -c 'reading' p.err)" 1 "progress only on the line before the summary"
# at most ten redraws a second
draws=$(tr -cd '\r' <p.err | wc -c)
secs=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' p.err)
awk -v d="$draws" -v s="$secs" 'BEGIN { exit !(d <= 2 * (10 * s + 2)) }' \
    || fail "$draws carriage returns in $secs s"
expect_eq "$(kinds_of p.err)" "$(kinds_in_db big.db)" "events per kind after a progress line"
# warnings printed while the line is shown start on a line of their own
# (standard input that pauses keeps the line on screen when k2.json warns)
slow="head -c 4096 big.nvvp; sleep 0.5; tail -c +4097 big.nvvp"
sh -c "$slow" | TR_PROGRESS=1 "$BIN/trace-ingest" -o kp.db k1.json - k2.json 2>"$TMP/err" \
    || fail "k1.json - k2.json: $(head -c 300 "$TMP/err")"
tr '\r' '\n' <"$TMP/err" >kp.lines
expect_grep '^trace-ingest: reading <stdin> (2/3): ' kp.lines
expect_eq "$(grep -c '^trace-ingest: warning: ' kp.lines)" 4 "warnings at the start of a line"
expect_eq "$(grep 'warning:' kp.lines | grep -vc '^trace-ingest: warning: ')" 0 "warnings mixed with the line"
expect_grep '^  warnings  4 of 2 kinds (above)$' kp.lines
# not a terminal: no line; TR_PROGRESS=0 hides it on a terminal
expect_status 0 "$BIN/trace-ingest" -o big2.db big.nvvp
expect_no_grep "$(printf '\r')" "$TMP/err"
expect_no_grep 'reading' "$TMP/err"
if command -v script >/dev/null 2>&1; then
    # standard input that pauses: the run outlasts the tick a terminal waits for
    # before its first line, however fast the machine
    script -qec "{ $slow; } | '$BIN/trace-ingest' -o tty.db -" /dev/null >tty.out 2>&1 </dev/null
    grep -q 'trace-ingest: reading <stdin>' tty.out \
        || fail "no progress line on a terminal: $(tr '\r' '|' <tty.out | head -c 300)"
    expect_grep 'tty\.db: 60,001 events' tty.out
    TR_PROGRESS=0 script -qec "{ $slow; } | '$BIN/trace-ingest' -o tty0.db -" /dev/null >tty0.out 2>&1 </dev/null
    expect_no_grep 'reading' tty0.out
    expect_grep 'tty0\.db: 60,001 events' tty0.out
fi

# '-' is standard input: a pipe (spooled) or a redirected file, named <stdin>
cat "$S" | "$BIN/trace-ingest" -o in1.db - 2>in1.err || fail "'-' from a pipe: $(cat in1.err)"
expect_grep '^  source    <stdin>: nvprof 12, 1,537 events' in1.err
expect_eq "$(q in1.db 'SELECT path FROM sources')" "<stdin>" "source path of standard input"
expect_eq "$(kinds_in_db in1.db)" "$(kinds_in_db s.db)" "events from a pipe"
"$BIN/trace-ingest" -o in2.db - <"$S" 2>in2.err || fail "'-' from a file: $(cat in2.err)"
expect_eq "$(q in2.db 'SELECT path FROM sources')" "<stdin>" "source path of redirected standard input"
expect_eq "$(kinds_in_db in2.db)" "$(kinds_in_db s.db)" "events from a redirected file"
kineto | "$BIN/trace-ingest" -o in3.db - k2.json 2>in3.err || fail "'-' and a file: $(cat in3.err)"
expect_grep '^trace-ingest: warning: <stdin>: 2 event(s) of unknown category' in3.err
expect_grep '^    4 event(s) of unknown category skipped' in3.err
ls "$TMPDIR"/trace-ingest-input* >/dev/null 2>&1 && fail "spool file left behind"
echo junk | "$BIN/trace-ingest" -o bad.db - 2>bad.err
expect_eq "$?" 3 "junk on standard input"
expect_grep '^trace-ingest: <stdin>: unrecognised input format' bad.err
expect_no_file bad.db
# the output may not be the input, also through standard input
cp "$S" same.db
"$BIN/trace-ingest" -o same.db - <same.db 2>same.err
expect_eq "$?" 2 "standard input that is the output"
cmp -s same.db "$S" || fail "the input behind standard input was overwritten"
