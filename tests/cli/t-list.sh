# trace-analyze --list: what a run.db holds to select from, with counts; a --thread,
# --device or --stream that names nothing exits 3 naming what exists; typos get the
# closest valid name.

# two threads (one named), two steps, kernels on device 0 stream 7, a copy on stream 9, rank 3
python3 - <<'PY'
import json
ev = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "main"}},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 11, "ts": 10, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#5", "pid": 1, "tid": 11, "ts": 110, "dur": 50}]
def launch(tid, ts, corr, cat, name, stream, gts, gdur):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": tid, "ts": ts,
               "dur": 2, "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": gts, "dur": gdur,
               "args": {"device": 0, "stream": stream, "correlation": corr}})
launch(11, 20, 1, "kernel", "k1", 7, 30, 10)
launch(11, 120, 2, "kernel", "k2", 7, 130, 20)
launch(12, 60, 3, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 9, 70, 5)
json.dump({"distributedInfo": {"rank": 3}, "traceEvents": ev}, open("l.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o l.db l.json

expect_status 0 "$BIN/trace-analyze" --list threads --format csv l.db
expect_eq "$(cut -d, -f1,3-5 "$TMP/out" | tr '\n' ' ')" \
    "tid,name,events,gpu_launches 11,main,4,2 12,,1,1 " "--list threads: names, host events, launches"
expect_status 0 "$BIN/trace-analyze" --list threads l.db
expect_eq "$(head -1 "$TMP/out" | tr -s ' ')" "thread pid name events gpu launches process" "text header"
expect_status 0 "$BIN/trace-analyze" --list devices --format csv l.db
expect_eq "$(cut -d, -f1,6,7 "$TMP/out" | tail -n +2)" "0,3,35000" "--list devices: activities and GPU time"
expect_status 0 "$BIN/trace-analyze" --list streams --format csv l.db
expect_eq "$(cut -d, -f1,2,4,5 "$TMP/out" | tail -n +2 | tr '\n' ' ')" "7,0,2,30000 9,0,1,5000 " "--list streams"
expect_status 0 "$BIN/trace-analyze" --list kinds --format csv l.db
expect_eq "$(tail -n +2 "$TMP/out" | tr '\n' ' ')" \
    "range,cpu,2,150000 runtime,cpu,3,6000 kernel,gpu,2,30000 memcpy,gpu,1,5000 " "--list kinds"
# the steps' start and end are what --time-range takes (ns after the first event at 10 us)
expect_status 0 "$BIN/trace-analyze" --list steps --format csv l.db
expect_eq "$(tail -n +2 "$TMP/out" | tr '\n' ' ')" "4,1,0,100000,100000 5,1,100000,150000,50000 " "--list steps"
expect_status 0 "$BIN/trace-analyze" --list steps --format json l.db
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert [r['step'] for r in d]==[4,5]" "$TMP/out" \
    || fail "--list steps --format json does not parse"
expect_status 0 "$BIN/trace-analyze" --time-range 100000:150000 --kind kernel --format csv l.db
expect_eq "$(cut -d, -f1 "$TMP/out" | tail -n +2)" "k2" "a step's range from --list selects its kernel"
expect_status 0 "$BIN/trace-analyze" --list ranks --format csv l.db
expect_eq "$(cut -d, -f1,3,4 "$TMP/out" | tail -n +2)" "3,kineto,8" "--list ranks"
expect_status 0 "$BIN/trace-analyze" --list ranks --format markdown l.db
expect_grep '^| rank | host |' "$TMP/out"

# the sample has no steps: a message, not a bare header
expect_status 0 "$BIN/trace-ingest" -q -o s.db "$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
expect_status 0 "$BIN/trace-analyze" --list steps s.db
expect_eq "$(cat "$TMP/out")" "" "no steps: nothing on stdout"
expect_grep 'no ProfilerStep#N ranges' "$TMP/err"
expect_status 0 "$BIN/trace-analyze" --list threads --format csv s.db
expect_eq "$(cut -d, -f1,4,5 "$TMP/out" | tail -n +2 | tr '\n' ' ')" "1000,769,256 1001,384,128 " \
    "--list threads on the sample"

# --list needs a known list, and suggests
expect_status 2 "$BIN/trace-analyze" --list thread l.db
expect_one_line_error
expect_grep "unknown list 'thread'; did you mean threads?" "$TMP/err"
expect_status 0 "$BIN/trace-analyze" --help
expect_grep '[-]-list WHAT' "$TMP/out"

# a filter that names nothing: exit 3 naming what exists, in both tools
expect_status 3 "$BIN/trace-analyze" --thread 999 l.db
expect_one_line_error
expect_grep "no thread 999 (threads: 11 'main', 12;" "$TMP/err"
expect_status 3 "$BIN/trace-analyze" --device 2 --report gpu-time l.db
expect_one_line_error
expect_grep "no device 2 (devices: 0" "$TMP/err"
expect_status 3 "$BIN/trace-analyze" --stream 8 l.db
expect_grep "no stream 8 (streams: 7, 9;" "$TMP/err"
expect_status 0 "$BIN/trace-analyze" --thread 12 --stream 9 l.db
expect_status 3 "$BIN/trace-export" --stacks --thread 13 l.db
expect_one_line_error
expect_grep "no thread 13" "$TMP/err"
expect_status 3 "$BIN/trace-export" --flamegraph --device 1 -o x.svg l.db
expect_no_file x.svg
# a hostile thread name stays on the one line
sqlite3 l.db "UPDATE strings SET value = 'a' || char(10) || 'b' WHERE value = 'main'"
expect_status 3 "$BIN/trace-analyze" --thread 999 l.db
expect_one_line_error

# did you mean: sort keys (and their aliases), kinds, reports, formats, metrics
for c in "-s self_cuda_time_totl:self_cuda_time_total" "--kind kernal:kernel" "--kind ops,memcopy:memcpy" \
         "--report stpes:steps" "--report kernels,gpu_time:gpu-time" "--format jsno:json" \
         "--format mark:markdown"; do
    opt=${c%:*} sugg=${c##*:}
    # shellcheck disable=SC2086
    expect_status 2 "$BIN/trace-analyze" $opt l.db
    expect_one_line_error
    expect_grep "did you mean $sugg?" "$TMP/err"
done
expect_status 2 "$BIN/trace-analyze" -s zzzzzz l.db
expect_no_grep "did you mean" "$TMP/err"
expect_grep "valid: cpu_time_total" "$TMP/err"
expect_status 2 "$BIN/trace-export" --stacks --metric slef_gpu l.db
expect_one_line_error
expect_grep "did you mean self_gpu?" "$TMP/err"

# the steps view of run.db agrees with --list steps
expect_eq "$(q l.db 'SELECT step, ranges, dur_ns FROM steps ORDER BY step' | tr '\n' ' ')" "4|1|100000 5|1|50000 " \
    "the steps view"

# trace-ingest --format too
expect_status 2 "$BIN/trace-ingest" --format kinteo -o never.db l.json
expect_one_line_error
expect_grep "did you mean kineto?" "$TMP/err"
expect_no_file never.db

# a hostile file's text in a number column stays valid JSON
cp l.db h.db
sqlite3 h.db "UPDATE threads SET tid = 'x\"y' WHERE tid = 11; UPDATE sources SET event_count = 9e999"
for l in threads ranks; do
    expect_status 0 "$BIN/trace-analyze" --list $l --format json h.db
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$TMP/out" || fail "--list $l json of a hostile file"
done

# --list list describes the lists; --list takes one run.db
expect_status 0 "$BIN/trace-analyze" --list list
expect_eq "$(cut -d' ' -f1 "$TMP/out" | tr '\n' ' ')" "threads devices streams kinds steps ranks " "--list list"
# over many run.dbs, one table (t-ranks.sh); the same file twice is said, as for the table
expect_status 0 "$BIN/trace-analyze" --list threads --format csv l.db l.db
expect_eq "$(grep -c '^l\.db,1[12],' "$TMP/out")" "4" "--list threads twice: each file's two threads"
expect_grep "warning: l.db is l.db again" "$TMP/err"
expect_status 2 "$BIN/trace-analyze" --list lsit l.db
expect_grep "did you mean list?" "$TMP/err"

# several run.dbs: a filter must match in one of them
expect_status 3 "$BIN/trace-analyze" --thread 999 l.db s.db
expect_one_line_error
expect_grep "l.db: no thread 999 (threads: 11" "$TMP/err"
expect_status 0 "$BIN/trace-analyze" --thread 1000 --format csv l.db s.db
expect_status 3 "$BIN/trace-analyze" --diff --stream 8 l.db s.db
expect_grep "no stream 8" "$TMP/err"
