# trace-record with the fake libcupti (no GPU): launcher behaviour, exact counts
# through raw files and trace-ingest, fork, crash, capture ranges, stacks.
REC=$BIN/trace-record
APP=$BIN/../rec/fake_app
if [ ! -x "$REC" ] || [ ! -x "$APP" ]; then
    skip "trace-record not built (no CUDA toolkit)"
else
counts() { # DB -> "kind=n ..." sorted by kind name
    q "$1" "SELECT group_concat(k || '=' || n, ' ') FROM (SELECT k.name AS k, count(*) AS n
            FROM events e JOIN kinds k ON k.id = e.kind GROUP BY 1 ORDER BY 1)"
}

# usage errors and programs that cannot run
expect_status 2 "$REC"
expect_one_line_error
expect_status 2 "$REC" --kinds bogus "$APP"
expect_status 2 "$REC" --buffer-size 12 "$APP"
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
dropped=$(sed -n 's/.*CUPTI dropped \([0-9]*\) activity.*/\1/p' "$TMP/err")
lost_kernels=$((12000 - kept))
[ "$lost_kernels" = 0 ] || [ "${dropped:-0}" -ge "$lost_kernels" ] ||
    fail "small buffers: $lost_kernels kernels lost, ${dropped:-0} records reported dropped"

# records dropped after the last buffer came back are still counted
FAKE_CUPTI_DROP_AFTER=200 expect_status 0 "$REC" -o dr.db "$APP" -n 100
kept=$(q dr.db "SELECT count(*) FROM events WHERE kind = 7")
dropped=$(sed -n 's/.*CUPTI dropped \([0-9]*\) activity.*/\1/p' "$TMP/err")
[ "$kept" -lt 100 ] && [ "${dropped:-0}" -ge $((100 - kept)) ] ||
    fail "drops at the end: $kept of 100 kernels kept, ${dropped:-0} records reported dropped"

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
# wide pushes inside the capture range on its own thread keep their pops paired
expect_status 0 "$REC" -o nvw.db --nvtx-capture step "$APP" -t 0 -n 60 --capture step --inner-wide
expect_eq "$(q nvw.db "SELECT count(*) FROM events WHERE kind = 7")" 60 "kernels in a range holding wide pushes"
# a CUPTI that gives the start callback no range id: nothing can be matched, ingest says so
FAKE_CUPTI_NO_RANGE_ID=1 expect_status 0 "$REC" -o seni.db --nvtx-capture step "$APP" -n 20 --start-end step
expect_grep "1 NVTX start/end capture range(s) ignored" "$TMP/err"

# --backtrace: one stack per launch, frames named after their functions at ingest
expect_status 0 "$REC" -o bt.db --backtrace "$APP" -n 20
expect_eq "$(q bt.db "SELECT count(*) FROM events WHERE kind = 4 AND stack_id IS NOT NULL")" 20 "launches with a stack"
expect_eq "$(q bt.db "SELECT count(*) FROM events e JOIN stack_nodes n ON n.id = e.stack_id
   JOIN strings s ON s.id = n.frame_id WHERE e.kind = 4 AND s.value = 'worker'")" 20 "launches whose innermost frame is worker()"
expect_eq "$(q bt.db "SELECT count(*) FROM strings WHERE value LIKE 'fake_app+0x%'")" 0 "fake_app frames left as offsets"
expect_no_grep "unsymbolised" "$TMP/err"

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
