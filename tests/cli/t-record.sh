# trace-record with the fake libcupti (no GPU): launcher behaviour, exact counts
# through raw files and trace-ingest, fork, crash, capture ranges, stacks.
REC=$BIN/trace-record
APP=$BIN/../rec/fake_app
if [ ! -x "$REC" ] || [ ! -x "$APP" ]; then
    skip "trace-record not built (no CUDA toolkit)"
else
# the warnings trace-ingest gave as they came (not its summary of them at the end)
warnings() { grep '^trace-ingest: warning: ' "$TMP/err"; }
counts() { # DB -> "kind=n ..." sorted by kind name
    q "$1" "SELECT group_concat(k || '=' || n, ' ') FROM (SELECT k.name AS k, count(*) AS n
            FROM events e JOIN kinds k ON k.id = e.kind GROUP BY 1 ORDER BY 1)"
}

# usage errors and programs that cannot run
expect_status 2 "$REC"
expect_one_line_error
expect_status 2 "$REC" --kinds bogus "$APP"
expect_status 2 "$REC" --buffer-size 12 "$APP"
# values that wrap or carry a sign are refused, not read as some other number
for bad in "--buffer-size 18014398509482048k" "--buffer-size -18446744073709486080" "--buffer-size 2G" \
           "--buffer-budget 4294967296g" "--flush-ms -18446744073709551416" "--flush-ms ' 5'" "--delay nan" \
           "--duration -1"; do
    eval "expect_status 2 \"\$REC\" $bad \"\$APP\""
    expect_one_line_error
done
# -o naming a directory is refused before the program runs
mkdir outdir
expect_status 1 "$REC" -o outdir sh -c 'echo ran > ran.txt'
expect_one_line_error
expect_grep "cannot write outdir: it is a directory" "$TMP/err"
expect_no_file ran.txt
expect_status 127 "$REC" -o nf.db ./no-such-program
expect_one_line_error
expect_grep "cannot run './no-such-program'" "$TMP/err"
expect_no_file nf.db
printf 'not executable\n' > notexec; chmod 644 notexec
expect_status 126 "$REC" -o ne.db ./notexec

# environment given to the program
expect_status 0 "$REC" -o env.db --kinds kernel,runtime --no-children "$APP" --print-env
agent=$(sed -n 's/^CUDA_INJECTION64_PATH=//p' "$TMP/out")
case $agent in /*libtracekit-agent.so) ;; *) fail "CUDA_INJECTION64_PATH not absolute agent path: $agent" ;; esac
expect_grep "^NVTX_INJECTION64_PATH=$agent\$" "$TMP/out"
expect_grep "^TRACE_RECORD_DIR=$TMP/env.db.raw\$" "$TMP/out"
expect_grep "^TRACE_RECORD_KINDS=kernel,runtime\$" "$TMP/out"
expect_grep '^TRACE_RECORD_ONLY_PID=[0-9]' "$TMP/out"
expect_grep "no trace written" "$TMP/err"
# another tool's injection is refused
CUDA_INJECTION64_PATH=/other/tool.so expect_status 1 "$REC" -o o.db "$APP"
expect_grep "already set" "$TMP/err"

# exit status passthrough, signals as 128+N
expect_status 7 "$REC" -o ex.db "$APP" -n 10 --exit 7
expect_status 139 "$REC" -o seg.db "$APP" -n 10 --signal 11
expect_grep "signal 11" "$TMP/err"

# 4 threads x 1500 iterations and a forked child (1 x 750): exact counts
expect_status 0 "$REC" -o run.db "$APP" -t 4 -n 1500 --fork
expect_eq "$(ls run.db.raw | wc -l)" 2 "raw files (parent + child)"
expect_eq "$(counts run.db)" \
  "driver=1 kernel=6750 mark=1 memcpy=5 memset=5 range=6751 runtime=6765 sync=5" "counts"
expect_eq "$(q run.db 'SELECT count(*) FROM processes')" 2 "processes"
expect_eq "$(q run.db "SELECT count(DISTINCT thread_id) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.name = 'runtime'")" 5 "API threads"
# every kernel has the launch API call of its correlation id
expect_eq "$(q run.db "SELECT count(*) FROM events k JOIN kinds kk ON kk.id = k.kind AND kk.name = 'kernel'
   WHERE NOT EXISTS (SELECT 1 FROM events a JOIN kinds ka ON ka.id = a.kind AND ka.name = 'runtime'
   WHERE a.correlation = k.correlation)")" 0 "kernels without their launch"
expect_eq "$(q run.db "SELECT count(*) FROM strings WHERE value LIKE 'vecAdd(%'")" 1 "demangled kernel name"

# --no-children: the forked child is not recorded
expect_status 0 "$REC" -o nc.db --no-children "$APP" -t 1 -n 100 --fork
expect_eq "$(ls nc.db.raw | wc -l)" 1 "raw files with --no-children"
expect_eq "$(counts nc.db)" "driver=1 kernel=100 mark=1 memcpy=1 memset=1 range=101 runtime=103 sync=1" "counts with --no-children"

# a child that execs (fork + exec, as torchrun or a shell starts its workers) is a
# process of its own, recorded unless --no-children; either way the program runs
expect_status 0 "$REC" -o sp.db "$APP" -n 100 --spawn
expect_eq "$(ls sp.db.raw | wc -l)" 2 "raw files (parent + exec'd child)"
expect_eq "$(q sp.db "SELECT count(*) FROM events WHERE kind = 7")" 150 "kernels of the parent and its exec'd child"
expect_status 0 "$REC" -o spn.db --no-children "$APP" -n 100 --spawn
expect_eq "$(ls spn.db.raw | wc -l)" 1 "raw files with --no-children (exec'd child)"
expect_eq "$(q spn.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels with --no-children (exec'd child)"

# --delay / --duration: 100 iterations at once, 10 more a second later; the window
# keeps either side only
expect_status 0 "$REC" -o dl.db --delay 0.5 "$APP" -n 100 --late 1000
expect_eq "$(q dl.db "SELECT count(*) FROM events WHERE kind = 7")" 10 "kernels after --delay"
expect_status 0 "$REC" -o du.db --duration 0.5 "$APP" -n 100 --late 1000
expect_eq "$(q du.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels within --duration"

# small buffers and a pool of 2: many buffers, and whatever CUPTI could not place
# is counted, so the kernels kept plus those reported dropped are all of them
TRACE_RECORD_POOL_BUFFERS=2 expect_status 0 "$REC" -o sb.db --buffer-size 64k "$APP" -t 4 -n 3000
kept=$(q sb.db "SELECT count(*) FROM events WHERE kind = 7")
dropped=$(warnings | sed -n 's/.*CUPTI dropped \([0-9]*\) activity.*/\1/p')
lost_kernels=$((12000 - kept))
[ "$lost_kernels" = 0 ] || [ "${dropped:-0}" -ge "$lost_kernels" ] ||
    fail "small buffers: $lost_kernels kernels lost, ${dropped:-0} records reported dropped"

# records dropped after the last buffer came back are still counted
FAKE_CUPTI_DROP_AFTER=200 expect_status 0 "$REC" -o dr.db "$APP" -n 100
kept=$(q dr.db "SELECT count(*) FROM events WHERE kind = 7")
dropped=$(warnings | sed -n 's/.*CUPTI dropped \([0-9]*\) activity.*/\1/p')
[ "$kept" -lt 100 ] && [ "${dropped:-0}" -ge $((100 - kept)) ] ||
    fail "drops at the end: $kept of 100 kernels kept, ${dropped:-0} records reported dropped"

# dropped records are reported per context and stream (each thread of the fake has a
# stream of its own): every 10th record is dropped; the streams' counts add up
FAKE_CUPTI_DROP_EVERY=10 expect_status 0 "$REC" -o de.db "$APP" -t 2 -n 100
streams=$(warnings | grep -c 'CUPTI dropped [0-9]* record(s) of context 1, stream 1[0-9][0-9]$')
[ "$streams" -ge 2 ] || fail "dropped records reported for $streams stream(s), expected the 2 workers' at least"
per=$(warnings | sed -n 's/.*CUPTI dropped \([0-9]*\) record(s) of context.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
expect_eq "$per" "$(warnings | sed -n 's/.*CUPTI dropped \([0-9]*\) activity.*/\1/p')" "dropped records per stream against the total"

# --raw-only keeps raw files and writes no database; trace-ingest reads them later
expect_status 0 "$REC" -o ro.db --raw-only "$APP" -n 50
expect_no_file ro.db
expect_status 0 "$BIN/trace-ingest" -o ro2.db ro.db.raw/*.ctr
expect_eq "$(q ro2.db "SELECT count(*) FROM events WHERE kind = 7")" 50 "kernels from --raw-only files"

# --kinds: only kernels and runtime calls
expect_status 0 "$REC" -o k.db --kinds kernel,runtime "$APP" -n 40
expect_eq "$(counts k.db)" "kernel=40 runtime=43" "counts with --kinds"

# kernels still running at exit (no timestamps) are skipped with a warning
expect_status 0 "$REC" -o inc.db "$APP" -n 40 --incomplete 5
expect_eq "$(q inc.db "SELECT count(*) FROM events WHERE kind = 7")" 35 "complete kernels"
expect_grep "5 GPU activities without timestamps" "$TMP/err"

# SIGTERM, SIGINT, SIGHUP left at their default: the agent finishes the file first,
# then the signal kills the program as before
expect_status 143 "$REC" -o term.db "$APP" -n 100 --signal 15
expect_eq "$(q term.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels kept at SIGTERM"
expect_no_grep "did not exit normally" "$TMP/err"
expect_status 130 "$REC" -o int.db "$APP" -t 2 -n 100 --signal 2
expect_eq "$(q int.db "SELECT count(*) FROM events WHERE kind = 7")" 200 "kernels kept at SIGINT"
"$REC" -o kill.db "$APP" -n 100 --sleep 5000 >/dev/null 2>"$TMP/err" &
rec_pid=$!
sleep 1
kill -TERM $rec_pid
wait $rec_pid
expect_eq "$?" 143 "status of a program sent SIGTERM through trace-record"
expect_eq "$(q kill.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels kept when SIGTERM comes from outside"
# a program's own handler is left in place
expect_status 42 "$REC" -o own.db "$APP" -n 10 --catch 15 --signal 15

# the other fatal signals at their default: a batch system's warning (SIGUSR1),
# a reader gone from a pipe (SIGPIPE), abort() and a real segmentation fault
expect_status 138 "$REC" -o usr1.db "$APP" -n 100 --signal 10
expect_eq "$(q usr1.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels kept at SIGUSR1"
expect_status 141 "$REC" -o pipe.db "$APP" -n 100 --signal 13
expect_eq "$(q pipe.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels kept at SIGPIPE"
expect_status 134 "$REC" -o abrt.db "$APP" -t 2 -n 100 --signal 6
expect_eq "$(q abrt.db "SELECT count(*) FROM events WHERE kind = 7")" 200 "kernels kept at abort()"
expect_no_grep "did not exit normally" "$TMP/err"
expect_status 139 "$REC" -o fault.db "$APP" -n 100 --fault
expect_eq "$(q fault.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels kept at a segmentation fault"
expect_no_grep "did not exit normally" "$TMP/err"

# SIGKILL: no END chunk, the data of the last periodic flush survives
expect_status 137 "$REC" -o kil.db --flush-ms 20 "$APP" -n 30 --sleep 300 --signal 9
expect_grep "did not exit normally" "$TMP/err"
[ -f kil.db ] && [ "$(q kil.db "SELECT count(*) FROM events WHERE kind = 7")" -gt 0 ] || fail "nothing recovered after SIGKILL"

# capture ranges: cudaProfilerStart/Stop and a named NVTX range keep only the
# 2 x 60 iterations inside; the 10 after are dropped
expect_status 0 "$REC" -o cp.db --capture-range cudaProfilerApi "$APP" -t 2 -n 60 --profiler
expect_eq "$(q cp.db "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in the profiler range"
expect_status 0 "$REC" -o nv.db --nvtx-capture step "$APP" -t 2 -n 60 --capture step
expect_eq "$(q nv.db "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in the NVTX range"
expect_eq "$(q nv.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = 'step'")" 1 "the capture range itself"
expect_eq "$(q nv.db "SELECT count(*) FROM events WHERE flags & 2")" 0 "unterminated ranges"

# start/end ranges: the capture range may be an nvtxRangeStartA/End pair
expect_status 0 "$REC" -o se.db --nvtx-capture step "$APP" -t 2 -n 60 --start-end step
expect_eq "$(q se.db "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in the start/end range"
expect_eq "$(q se.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = 'step'")" 1 "the start/end capture range itself"
# the capture range named in the other forms NVTX has: wide, an Ex call with a
# Unicode message, a registered string (ASCII or wide), for push/pop and start/end
for form in w ex-w registered registered-w; do
    expect_status 0 "$REC" -o "nv-$form.db" --nvtx-capture step "$APP" -t 2 -n 60 --capture step --form "$form"
    expect_eq "$(q "nv-$form.db" "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in a $form push/pop range"
    expect_status 0 "$REC" -o "se-$form.db" --nvtx-capture step "$APP" -t 2 -n 60 --start-end step --form "$form"
    expect_eq "$(q "se-$form.db" "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in a $form start/end range"
done
# a range of another domain opened inside the capture range and ended after it does
# not stretch the capture: each NVTX domain's ranges nest apart
expect_status 0 "$REC" -o nvd.db --nvtx-capture step "$APP" -t 2 -n 60 --capture step --domain-cross
expect_eq "$(q nvd.db "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in a range crossed by another domain's"
# wide pushes inside the capture range on its own thread keep their pops paired
expect_status 0 "$REC" -o nvw.db --nvtx-capture step "$APP" -t 0 -n 60 --capture step --inner-wide
expect_eq "$(q nvw.db "SELECT count(*) FROM events WHERE kind = 7")" 60 "kernels in a range holding wide pushes"
# a CUPTI that gives the start callback no range id: nothing can be matched, ingest says so
FAKE_CUPTI_NO_RANGE_ID=1 expect_status 0 "$REC" -o seni.db --nvtx-capture step "$APP" -n 20 --start-end step
expect_grep "1 NVTX start/end capture range(s) ignored" "$TMP/err"

# --backtrace: one stack per launch, frames named after their functions at ingest
# (with the line of the launch when fake_app has DWARF: t-backtrace-lines.sh)
expect_status 0 "$REC" -o bt.db --backtrace "$APP" -n 20
expect_eq "$(q bt.db "SELECT count(*) FROM events WHERE kind = 4 AND stack_id IS NOT NULL")" 20 "launches with a stack"
expect_eq "$(q bt.db "SELECT count(*) FROM events e JOIN stack_nodes n ON n.id = e.stack_id
   JOIN strings s ON s.id = n.frame_id WHERE e.kind = 4
   AND (s.value = 'worker' OR s.value LIKE 'worker (fake_app.c:%)')")" 20 "launches whose innermost frame is worker()"
expect_eq "$(q bt.db "SELECT count(*) FROM strings WHERE value LIKE 'fake_app+0x%'")" 0 "fake_app frames left as offsets"
expect_no_grep "unsymbolised" "$TMP/err"

# every CUPTI entry point made to fail in turn (FAKE_CUPTI_FAIL): never a crash or
# a hang, the program's status passes through, the recorder names the call and
# CUPTI's text, and ingest says what is missing
for fn in cuptiActivityRegisterTimestampCallback cuptiSetThreadIdType cuptiActivityRegisterCallbacks \
          cuptiActivityEnable cuptiActivityEnableAndDump cuptiActivityEnableDriverApi \
          cuptiActivityEnableRuntimeApi cuptiSubscribe cuptiEnableCallback cuptiActivityFlushAll \
          cuptiActivityGetNumDroppedRecords cuptiGetVersion cuptiGetTimestamp; do
    rm -rf fail.db fail.db.raw
    # cuptiGetTimestamp is only asked for when the timestamp callback failed
    extra=
    [ $fn = cuptiGetTimestamp ] && extra=,cuptiActivityRegisterTimestampCallback:CUPTI_ERROR_NOT_SUPPORTED
    FAKE_CUPTI_FAIL="$fn:CUPTI_ERROR_NOT_SUPPORTED$extra" \
        expect_status 5 timeout 60 "$REC" -o fail.db --backtrace --flush-ms 20 "$APP" -n 20 --sleep 100 --exit 5
    expect_grep "$fn.* failed: CUPTI_ERROR_NOT_SUPPORTED" "$TMP/err"
    expect_grep "trace-ingest: warning: .*$fn.* failed: CUPTI_ERROR_NOT_SUPPORTED" "$TMP/err"
done
# no call at all works (no driver, a CUPTI older than the driver): one line says so
FAKE_CUPTI_FAIL='*:CUPTI_ERROR_NOT_INITIALIZED' expect_status 0 timeout 60 "$REC" -o none.db "$APP" -n 10
expect_grep "CUPTI could not start: .*CUPTI_ERROR_NOT_INITIALIZED" "$TMP/err"
expect_no_grep "never initialised" "$TMP/err"
# the reason where the machine gives one: a driver older than CUPTI, no GPU
LD_LIBRARY_PATH=$BIN/../rec/fakecuda FAKE_CUDA_VERSION=12040 FAKE_CUPTI_FAIL='*:CUPTI_ERROR_UNKNOWN' \
    expect_status 0 "$REC" -o old.db "$APP" -n 10
expect_grep "CUPTI could not start: .*(the CUDA driver supports CUDA 12.4, older than this CUPTI's 13.0)" "$TMP/err"
if [ ! -e /dev/nvidiactl ]; then
    LD_LIBRARY_PATH=$BIN/../rec/fakecuda FAKE_CUPTI_FAIL='*:CUPTI_ERROR_UNKNOWN' \
        expect_status 0 "$REC" -o nogpu.db "$APP" -n 10
    expect_grep "CUPTI could not start: .*(no NVIDIA GPU: /dev/nvidiactl does not exist)" "$TMP/err"
fi
# a second subscriber is refused: the capture range cannot be seen, everything is kept
FAKE_CUPTI_FAIL=cuptiSubscribe:CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED \
    expect_status 0 "$REC" -o ms.db --nvtx-capture step "$APP" -n 20 --capture step
expect_grep "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED" "$TMP/err"
expect_eq "$(q ms.db "SELECT count(*) FROM events WHERE kind = 7")" 30 "kernels when the capture cannot be seen"

# the timestamp callback refused: records stay on CUPTI's own clock (the fake's runs
# 3 s ahead of CLOCK_REALTIME), which the file anchors; capture windows and the
# database's times stay right
before=$(date +%s)
FAKE_CUPTI_FAIL=cuptiActivityRegisterTimestampCallback:CUPTI_ERROR_NOT_INITIALIZED \
    expect_status 0 "$REC" -o clk.db --delay 0.5 "$APP" -n 100 --late 1000
after=$(date +%s)
expect_eq "$(q clk.db "SELECT count(*) FROM events WHERE kind = 7")" 10 "kernels after --delay on CUPTI's clock"
FAKE_CUPTI_FAIL=cuptiActivityRegisterTimestampCallback:CUPTI_ERROR_NOT_INITIALIZED \
    expect_status 0 "$REC" -o clk2.db --duration 0.5 "$APP" -n 100 --late 1000
expect_eq "$(q clk2.db "SELECT count(*) FROM events WHERE kind = 7")" 100 "kernels within --duration on CUPTI's clock"
first=$(q clk.db "SELECT min(start_ns) / 1000000000 FROM events WHERE kind = 7")
[ "$first" -ge "$before" ] && [ "$first" -le "$((after + 1))" ] ||
    fail "kernel time $first s outside the run [$before, $after]"

# copies join to the runtime call that made them (runtimeCorrelationId), not to the
# driver call inside it (correlationId)
expect_eq "$(q run.db "SELECT count(*) FROM events m JOIN kinds km ON km.id = m.kind AND km.name = 'memcpy'
   WHERE NOT EXISTS (SELECT 1 FROM events a JOIN kinds ka ON ka.id = a.kind AND ka.name = 'runtime'
   JOIN strings s ON s.id = a.name_id WHERE a.correlation = m.correlation AND s.value = 'cudaMemcpy')")" 0 \
   "copies not linked to their cudaMemcpy"

# a polling loop: 1000 not-ready queries, 1 ready, 1 cudaStreamSynchronize.  Queries
# are folded by default (and counted), never waits; --kinds query keeps their calls
expect_status 0 "$REC" -o poll.db "$APP" -n 10 --poll 1000
expect_eq "$(counts poll.db)" "driver=1 kernel=10 mark=1 memcpy=1 memset=1 range=11 runtime=14 sync=2" "counts of a polling run"
expect_grep "2002 stream/event query record(s) folded" "$TMP/err"
expect_status 0 "$REC" -o pollq.db --kinds kernel,runtime,sync,query "$APP" -n 10 --poll 1000
expect_eq "$(q pollq.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = 'cudaStreamQuery'")" 1001 "queries kept with --kinds query"
expect_eq "$(counts pollq.db)" "kernel=10 runtime=1015 sync=2" "counts with queries kept"

# --kinds overhead: CUPTI's own overhead becomes overhead events on their thread
expect_status 0 "$REC" -o ov.db --kinds kernel,overhead "$APP" -n 10 --overhead 3
expect_eq "$(q ov.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = '[overhead: CUPTI buffer flush]' AND e.thread_id IS NOT NULL")" 3 "overhead events"
expect_status 0 "$REC" -o nov.db "$APP" -n 10 --overhead 3
expect_eq "$(q nov.db "SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.name = 'overhead'")" 0 "overhead events without --kinds overhead"

# kernels CUDA launches itself have their internal-launch record
expect_status 0 "$REC" -o il.db "$APP" -n 10 --internal 5
expect_eq "$(q il.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = '[internal launch]'")" 5 "internal launches"
expect_eq "$(q il.db "SELECT count(*) FROM events k JOIN kinds kk ON kk.id = k.kind AND kk.name = 'kernel'
   WHERE NOT EXISTS (SELECT 1 FROM events a JOIN kinds ka ON ka.id = a.kind AND ka.name = 'runtime'
   WHERE a.correlation = k.correlation)")" 0 "kernels without their launch (internal launches)"

# the two doors in every order: CUDA first, both at once, and CUPTI set-up that
# initialises the driver, whose cuInit calls InitializeInjection again on the same
# thread (no lock may be held across it)
for order in nvtx-first cuda-first threads; do
    expect_status 0 timeout 60 "$REC" -o "or-$order.db" "$APP" -t 2 -n 50 --order "$order"
    expect_eq "$(counts "or-$order.db")" "driver=1 kernel=100 mark=1 memcpy=2 memset=2 range=101 runtime=106 sync=2" "counts, order $order"
    FAKE_CUPTI_REENTER=cuptiActivityEnable expect_status 0 timeout 60 "$REC" -o "re-$order.db" "$APP" -n 50 --order "$order"
    expect_eq "$(q "re-$order.db" "SELECT count(*) FROM events WHERE kind = 7")" 50 "kernels, re-entered set-up, order $order"
done

# another CUPTI client takes the buffers over: the recorder says so with the time,
# ingest warns that the trace is truncated there
expect_status 0 timeout 60 "$REC" -o to.db "$APP" -n 50 --takeover
expect_grep "took over" "$TMP/err"
expect_grep "trace truncated at [0-9.]* s: another CUPTI client took over" "$TMP/err"

# ... mid-run, at a known time, while the program keeps launching: the time given is
# the first periodic flush (every 200 ms) after the takeover, so at it or just after
expect_status 0 timeout 60 "$REC" -o tm.db "$APP" -n 50 --takeover-at 500
swap=$(sed -n 's/^takeover-at-ns=//p' "$TMP/out")
# the header's t0_realtime, at byte 40 (docs/raw-format.md): the swap time is CLOCK_REALTIME too
t0=$(od -An -tu8 -j40 -N8 "$(ls tm.db.raw/*.ctr | head -1)" | tr -d ' ')
at=$(sed -n 's/.*trace truncated at \([0-9.]*\) s: another CUPTI client took over.*/\1/p' "$TMP/err" | head -1)
expect_grep "took over (the first periodic flush that gave back none of the recorder's buffers; CUPTI last called its buffer callbacks [0-9.]* s before" "$TMP/err"
awk -v s="$swap" -v t0="$t0" -v at="${at:-x}" 'BEGIN { d = at - (s - t0) / 1e9; exit !(at != "x" && d >= -0.001 && d <= 1.0) }' ||
    fail "takeover at $(awk -v s="$swap" -v t0="$t0" 'BEGIN { printf "%.3f", (s - t0) / 1e9 }') s reported at ${at:-?} s"

# agent memory stays bounded: 1M ranges of unique names grow the process by at most
# 16 MB.  The buffer pool is held to 4 MB, so that a writer slowed by a loaded machine
# cannot make the pool's growth (a budget of its own) look like the agent's
expect_status 0 "$REC" -o uq.db --raw-only --buffer-size 1M --buffer-budget 4M "$APP" -n 1 --unique-ranges 1000000
growth=$(sed -n 's/^rss-growth-kb=//p' "$TMP/out")
[ -n "$growth" ] && [ "$growth" -le 16384 ] || fail "1M unique range names grew the process by ${growth:-?} KB"

# a program that uses NVTX and never CUDA, under the real libcupti: where there is
# no GPU CUPTI cannot start; the recorder says why and records the ranges itself
NVAPP=$BIN/../rec/nvtx_only
expect_status 0 timeout 60 "$REC" -o nvo.db "$NVAPP"
expect_eq "$(counts nvo.db)" "mark=1 range=22" "events of an NVTX-only program"
expect_eq "$(q nvo.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value IN ('inner', 'registered')")" 11 "wide and registered NVTX names"
expect_eq "$(q nvo.db "SELECT count(*) FROM threads t JOIN strings s ON s.id = t.name_id WHERE s.value = 'nvtx-main'")" 1 "thread named with nvtxNameOsThreadA"
expect_no_grep "no events in the input" "$TMP/err"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    expect_grep "CUPTI could not start: .*libcuda.so.1.*NVTX is still recorded" "$TMP/err"
    # a child forked without exec records its NVTX ranges into a file of its own
    expect_status 0 timeout 60 "$REC" -o nvfork.db "$NVAPP" --fork
    expect_eq "$(ls nvfork.db.raw | wc -l)" 2 "raw files of an NVTX-only program and its fork"
    expect_eq "$(q nvfork.db "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = 'child'")" 5 "ranges of the forked child"
fi

# a forked child keeps the parent's CUPTI subscriber (a second one is refused), so
# its capture range still works: the child's 30 iterations are outside any range
expect_status 0 "$REC" -o nvf.db --nvtx-capture step "$APP" -t 2 -n 60 --capture step --fork
expect_eq "$(q nvf.db "SELECT count(*) FROM events WHERE kind = 7")" 120 "kernels in the NVTX range with a forked child"
expect_no_grep "MULTIPLE_SUBSCRIBERS" "$TMP/err"

# --buffer-budget: the pool's memory; 128k with 64k buffers is a pool of 2
expect_status 0 "$REC" -o bb.db --buffer-size 64k --buffer-budget 128k "$APP" -t 4 -n 3000
expect_grep "buffer request(s) refused: buffer pool exhausted" "$TMP/err"
expect_status 2 "$REC" --buffer-budget 1k "$APP"

# a recorded file cut short at sampled offsets: ingest succeeds with a warning or fails
# with exit 3, and never finds more kernels in a shorter prefix
f=$(ls ex.db.raw/*.ctr | head -1)
size=$(wc -c < "$f")
prev=-1 off=0
while [ "$off" -le "$size" ]; do
    head -c "$off" "$f" > cut.ctr
    "$BIN/trace-ingest" -o cut.db cut.ctr >/dev/null 2>"$TMP/cerr"
    rc=$?
    if [ $rc = 0 ]; then
        n=$(q cut.db "SELECT count(*) FROM events WHERE kind = 7")
        [ "$n" -ge "$prev" ] || fail "kernels not monotonic at offset $off: $n < $prev"
        prev=$n
        [ "$off" = "$size" ] || grep -q "truncated\|no end marker" "$TMP/cerr" || fail "no warning at offset $off"
    elif [ $rc != 3 ]; then
        fail "ingest of a file cut at $off exited $rc"
    fi
    off=$((off + 211))
done
fi
