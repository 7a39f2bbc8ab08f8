#!/bin/sh
# make bench: speed and memory of every step at 10^5..10^7 events, on an nvprof
# database, a Kineto JSON trace and a trace-record raw file of the same size (made
# by gen-nvprof, gen-kineto and gen-raw), and the ingest of an Nsight Systems export
# of the nvprof database's events (gen-nvprof -f nsys), beside the PyTorch 1.13 pipeline, a bare
# sqlite3 GROUP BY and a plain read of the input, and a yardstick of fixed work before
# each size, so that the machine's own drift is in the table too.  The ingest of a raw file is
# measured again on a `trace-record --backtrace` file of the same events (gen-raw
# --stacks), whose launch calls carry native stacks the ingest names from the
# symbols and DWARF source lines of the files the generator had mapped.
# Prints a markdown table and writes it to bench/RESULTS.md.  Never fails on time.
# Environment: BIN (tools), BENCH_SIZES (default "100000 1000000 10000000"),
# BENCH_DIR (scratch, default build/bench), BENCH_TORCH_MAX (largest size given to
# PyTorch, default 1000000: beyond that its pipeline takes too long), BENCH_STACKS
# (distinct stacks of the --backtrace file, default 1000; 0: no such rows),
# BENCH_STACKS_MAX (its largest size, default 1000000: the rows beyond it would
# only repeat the raw ingest's), BENCH_RECORD_ITERS (kernel launches of the
# recorder's own-cost rows, default 1000000; 0: none), BENCH_SMOKE=1 (10^5 events, no
# PyTorch, no stacks, no recorder rows, bench/RESULTS.md left as it is: `make test` runs
# it so the benchmark cannot rot; it checks that every step ran, never its times),
# BENCH_RSS_SIZES (ingest-only sizes for the peak-RSS rows, default 30000000; "" none),
# BENCH_FOLDED_LINES (lines of the folded file the SVG step is timed on, default
# 300000; 0 none), BENCH_RANKS and BENCH_RANK_EVENTS (the many-rank job: ranks, default
# 64, and events per rank, default 100000; 0 ranks: none), BENCH_REAL (a real trace run end to end, default the largest file under
# ../shared/traces when that folder is there; "" none).
# The last section sets the figures of the first benchmark (bench/RESULTS.md of
# 2026-11-22) beside this run's and the goals.
set -u
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
    BENCH_SIZES=100000 BENCH_TORCH_MAX=0 BENCH_STACKS=0 BENCH_RECORD_ITERS=0 BENCH_RSS_SIZES='' BENCH_FOLDED_LINES=10000
    BENCH_RANKS=4 BENCH_RANK_EVENTS=5000
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
BIN=$(cd "${BIN:-$root/build/bin}" && pwd)
SIZES=${BENCH_SIZES:-"100000 1000000 10000000"}
TORCH_MAX=${BENCH_TORCH_MAX:-1000000}
STACKS=${BENCH_STACKS:-1000}
STACKS_MAX=${BENCH_STACKS_MAX:-1000000}
RECORD_ITERS=${BENCH_RECORD_ITERS:-1000000}
RSS_SIZES=${BENCH_RSS_SIZES-30000000}
FOLDED_LINES=${BENCH_FOLDED_LINES:-300000}
RANKS=${BENCH_RANKS:-64}
RANK_EVENTS=${BENCH_RANK_EVENTS:-100000}
if [ -z "${BENCH_REAL+set}" ]; then
    BENCH_REAL=''
    [ -d "$root/../shared/traces" ] && BENCH_REAL=$(find "$root/../shared/traces" -type f \
        \( -name '*.json*' -o -name '*.sqlite' -o -name '*.nvvp' -o -name '*.prof' -o -name '*.sql' \) \
        -not -path '*/reference/*' -printf '%s %p\n' 2>/dev/null | sort -n | tail -1 | cut -d' ' -f2-)
fi
[ "${BENCH_SMOKE:-0}" = 1 ] && BENCH_REAL=''
W=${BENCH_DIR:-$root/build/bench}
[ "${BENCH_SMOKE:-0}" = 1 ] && W=${BENCH_DIR:-$root/build/bench-smoke}
mkdir -p "$W"
out="$W/results.md"
log="$W/steps.tsv"   # size, format, step, wall, cpu, rss KB, events: for the summary
: > "$log"
have_torch=0
/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 && have_torch=1

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
# the ingest with every array on the heap, beside its default 256 MiB limit
HALF_RAM=$(awk '/MemTotal/ { printf "%dM", $2 / 2048 }' /proc/meminfo)
IN_MEMORY="trace-ingest, in memory (--max-memory half the RAM)"
{
    echo "# Benchmark results"
    echo
    echo "Machine: $(nproc) cores, $cpu, $mem; $(uname -sr); $(date -u +%Y-%m-%d)."
    echo "Each step is one run of the command: wall time, CPU time (user + system), peak RSS; for the steps"
    echo "a goal is set on, the run of the median wall time of three: the ingest, the chrome export, the"
    echo "sqlite3 GROUP BY floor and --group-by-stack 3 scanning the events from 10^6 events on (the peak-RSS"
    echo "rows past the sizes: one run), and the nvprof table the PyTorch ratio divides by."
    echo "Events are the rows of run.db; MB/s is of the input file (JSON: uncompressed)."
    echo
    echo "events/s and MB/s are per wall second.  trace-ingest runs a second thread beside the first (docs/ingest.md,"
    echo "\"The second core\"), so its CPU seconds may exceed its wall seconds; the other tools are single-threaded."
    echo "trace-ingest holds to its default memory limit, 256 MiB (docs/ingest.md, \"Bounded memory\"); \"in memory\" gives"
    echo "it half the RAM: its large arrays stay on the heap up to a quarter of that."
    echo "raw --backtrace: the raw file's events, each kernel launch call with one of $STACKS native stacks of"
    echo "20-30 frames, which the ingest names from the ELF symbols and DWARF lines (libdwfl) of the files gen-raw had mapped (gen-raw --stacks)."
    echo "yardstick: the same fixed work before each size and after the last (\"end\"): the CPU, and the page cache. The"
    echo "machine's speed drifts within a run and between runs; compare a time with another run's only where they agree."
    echo
    echo "| events | format | step | seconds | CPU s | events/s | MB/s | peak RSS MB |"
    echo "|---:|---|---|---:|---:|---:|---:|---:|"
} > "$out"

# step FORMAT STEP EVENTS INPUT_BYTES COMMAND...: measures COMMAND and appends a row;
# with REPS=N set, runs it N times (BEFORE, a shell command, before each) and keeps
# the run of the median wall time (the steps a ratio is taken of: one slow moment of a
# shared machine must not decide it)
step() {
    fmt=$1 name=$2 n=$3 bytes=$4
    shift 4
    : > "$W/runs"
    for _ in $(seq "${REPS:-1}"); do
        [ -z "${BEFORE:-}" ] || sh -c "$BEFORE"
        "$BIN/measure" -o "$W/m" "$@" >/dev/null 2>"$W/err"
        cat "$W/m" >> "$W/runs"
    done
    sort -n -k1,1 "$W/runs" | sed -n "$(( ($(wc -l < "$W/runs") + 1) / 2 ))p" > "$W/m"
    read -r wall rss code cpu < "$W/m"
    last_ok=0
    if [ "$code" != 0 ]; then
        echo "| $size | $fmt | $name | failed (exit $code) | | | | |" >> "$out"
        return
    fi
    last_ok=1
    awk -v s="$size" -v f="$fmt" -v st="$name" -v w="$wall" -v c="$cpu" -v n="$n" -v b="$bytes" -v r="$rss" 'BEGIN {
        eps = (n > 0 && w > 0) ? sprintf("%.0f", n / w) : "";
        mbs = (b > 0 && w > 0) ? sprintf("%.0f", b / 1e6 / w) : "";
        printf "| %s | %s | %s | %.2f | %.2f | %s | %s | %.1f |\n", s, f, st, w, c, eps, mbs, r / 1024 }' >> "$out"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$size" "$fmt" "$name" "$wall" "$cpu" "$rss" "$n" "$bytes" >> "$log"
    eval "T_$(echo "$fmt$name" | tr -c 'a-zA-Z0-9\n' _)=$wall"
    eval "R_$(echo "$fmt$name" | tr -c 'a-zA-Z0-9\n' _)=$rss"
}

# set_events EVENTS INPUT_BYTES: the last step's row again, now that its event
# count is known (an ingest's is known only once it has run)
set_events() {
    [ "${last_ok:-0}" = 1 ] || return 0
    last=$(tail -n 1 "$log")
    sed -i '$d' "$out"
    sed -i '$d' "$log"
    printf '%s\n' "$last" | awk -F '\t' -v OFS='\t' -v n="$1" '{ $7 = n; print }' >> "$log"
    printf '%s\n' "$last" | awk -F '\t' -v n="$1" -v b="$2" '{
        eps = (n > 0 && $4 > 0) ? sprintf("%.0f", n / $4) : "";
        mbs = (b > 0 && $4 > 0) ? sprintf("%.0f", b / 1e6 / $4) : "";
        printf "| %s | %s | %s | %.2f | %.2f | %s | %s | %.1f |\n", $1, $2, $3, $4, $5, eps, mbs, $6 / 1024 }' >> "$out"
}

# dbsize FORMAT EVENTS: run.db's bytes per event (pages in use, so the figure is the
# file's own size: trace-ingest vacuums nothing and leaves no free pages)
dbsize() {
    [ "$2" -gt 0 ] || return 0
    b=$(stat -c %s "$W/run.db")
    awk -v s="$size" -v f="$1" -v b="$b" -v n="$2" 'BEGIN {
        printf "| %s | %s | run.db size | %.1f MB, %.0f bytes/event | | | | |\n", s, f, b / 1e6, b / n }' >> "$out"
    printf '%s\t%s\trun.db bytes\t\t\t\t%s\t%s\n' "$size" "$1" "$2" "$b" >> "$log"
}

# yardstick: the same fixed work before each size and after the last, so that the
# machine's speed through the run is in the table.  It drifts: this 2-core VM has run
# the same commands at half the speed of an hour before.  Two rows: the CPU (sqlite3
# summing 3x10^6 integers in memory) and the page cache (zeros written into a new file
# and the file removed, the kernel's part of an ingest that writes run.db and spill
# files).  A time here is comparable with another run's only where the yardsticks agree.
YARD_MB=512
[ "${BENCH_SMOKE:-0}" = 1 ] && YARD_MB=16
yardstick() {
    step yardstick "CPU: sqlite3 sums 3x10^6 integers in memory" 0 0 sqlite3 :memory: \
        'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT sum(x) FROM c'
    step yardstick "page cache: $YARD_MB MiB of zeros into a new file, removed" 0 $((YARD_MB << 20)) \
        sh -c "dd if=/dev/zero of='$W/yardstick' bs=1M count=$YARD_MB status=none && rm -f '$W/yardstick'"
}

# make_input FORMAT SIZE: the generator's input of that format and size; sets $in
make_input() {
    case $1 in
        nvprof) in=$W/t.nvvp && "$BIN/gen-nvprof" -n "$2" -o "$in" ;;
        nsys) in=$W/t.sqlite && "$BIN/gen-nvprof" -f nsys -n "$2" -o "$in" ;;
        kineto) in=$W/t.json && "$BIN/gen-kineto" -n "$2" -o "$in" ;;
        raw) in=$W/t.ctr && "$BIN/gen-raw" -n "$2" -o "$in" ;;
    esac
}

for size in $SIZES; do
    echo "bench: $size events" >&2
    yardstick
    for fmt in nvprof nsys kineto raw; do
        make_input "$fmt" "$size"
        bytes=$(stat -c %s "$in")
        step "$fmt" "read input (I/O floor)" 0 "$bytes" sh -c "cat '$in' > /dev/null"
        # each ingest writes a new file: replacing the last step's run.db would add
        # the file system's freeing of it (0.05 s for 100 MB) to whichever step came next
        rm -f "$W/run.db"
        # the steps with goals, whose one slow moment on a shared machine must not
        # decide them: from 10^6 events the ingest (its rate) and the chrome export;
        # the ingest and the table the PyTorch ratio divides by
        goal_reps=1
        [ "$size" -ge 1000000 ] && goal_reps=3
        reps=1
        [ "$fmt" = nvprof ] && [ "$have_torch" = 1 ] && [ "$size" -le "$TORCH_MAX" ] && reps=3
        ingest_reps=$goal_reps
        [ "$reps" -gt "$ingest_reps" ] && ingest_reps=$reps
        REPS=$ingest_reps BEFORE="rm -f '$W/run.db'" step "$fmt" "trace-ingest" 0 "$bytes" \
            "$BIN/trace-ingest" -q -o "$W/run.db" "$in"
        n=$(sqlite3 "$W/run.db" 'SELECT count(*) FROM events')
        set_events "$n" "$bytes"
        dbsize "$fmt" "$n"
        # the same ingest with every array on the heap: what the default 256 MiB limit
        # costs in time and saves in memory (docs/ingest.md)
        events=$n
        step "$fmt" "$IN_MEMORY" 0 "$bytes" "$BIN/trace-ingest" --max-memory "$HALF_RAM" -q -o "$W/runmem.db" "$in"
        n=$events   # step() sets n
        rm -f "$W/runmem.db"
        # nsys's events are nvprof's: what reads run.db would only repeat nvprof's rows
        if [ "$fmt" = nsys ]; then
            rm -f "$in"
            continue
        fi
        REPS=$goal_reps step "$fmt" "sqlite3 GROUP BY (floor)" "$n" 0 sqlite3 "$W/run.db" \
            "SELECT name_id, kind IN (7,8,9), count(*), sum(cpu_total_ns), sum(cpu_self_ns), sum(gpu_total_ns), sum(gpu_self_ns) FROM events GROUP BY 1, 2"
        REPS=$reps step "$fmt" "trace-analyze" "$n" 0 sh -c "'$BIN/trace-analyze' '$W/run.db' > /dev/null"
        step "$fmt" "trace-analyze --group-by-shape" "$n" 0 sh -c "'$BIN/trace-analyze' --group-by-shape '$W/run.db' > /dev/null"
        # the same table from every event instead of the ingest-time aggregates (docs/schema.md)
        step "$fmt" "trace-analyze, scanning the events" "$n" 0 sh -c "TR_NO_AGGREGATES=1 '$BIN/trace-analyze' '$W/run.db' > /dev/null"
        step "$fmt" "trace-analyze --group-by-stack 3" "$n" 0 sh -c "'$BIN/trace-analyze' --group-by-stack 3 '$W/run.db' > /dev/null"
        REPS=$goal_reps step "$fmt" "trace-analyze --group-by-stack 3, scanning the events" "$n" 0 sh -c "TR_NO_AGGREGATES=1 '$BIN/trace-analyze' --group-by-stack 3 '$W/run.db' > /dev/null"
        # PyTorch's own self times and memory rule, from every event (docs/semantics.md)
        step "$fmt" "trace-analyze --compat torch" "$n" 0 sh -c "'$BIN/trace-analyze' --compat torch '$W/run.db' > /dev/null"
        # the reports, beside sqlite3 reading the GPU activities in start order (gpu-time's scan)
        step "$fmt" "sqlite3 GPU activities by start (report floor)" "$n" 0 sqlite3 "$W/run.db" \
            "SELECT count(*), sum(end_ns - start_ns) FROM (SELECT start_ns, end_ns FROM events WHERE kind IN (7,8,9) ORDER BY start_ns)"
        for r in summary gpu-time kernels api launch gaps; do
            step "$fmt" "trace-analyze --report $r" "$n" 0 sh -c "'$BIN/trace-analyze' --report $r '$W/run.db' > /dev/null 2>&1"
        done
        step "$fmt" "trace-export --html" "$n" 0 "$BIN/trace-export" --html -o "$W/report.html" "$W/run.db"
        [ -f "$W/report.html" ] && echo "| $size | $fmt | HTML report size | $(stat -c %s "$W/report.html") bytes | | | | |" >> "$out"
        rm -f "$W/report.html"
        step "$fmt" "trace-export --stacks" "$n" 0 "$BIN/trace-export" --stacks -o "$W/out" "$W/run.db"
        step "$fmt" "trace-export --flamegraph" "$n" 0 "$BIN/trace-export" --flamegraph -o "$W/out" "$W/run.db"
        REPS=$goal_reps BEFORE="rm -f '$W/out'" step "$fmt" "trace-export --chrome" "$n" 0 \
            "$BIN/trace-export" --chrome -o "$W/out" "$W/run.db"
        rm -f "$W/out"
        if [ "$fmt" = nvprof ]; then
            if [ "$have_torch" = 0 ]; then
                echo "| $size | nvprof | PyTorch 1.13 pipeline | not run: /usr/bin/python3 has no torch | | | | |" >> "$out"
            elif [ "$size" -gt "$TORCH_MAX" ]; then
                echo "| $size | nvprof | PyTorch 1.13 pipeline | not run: above $TORCH_MAX events it takes too long | | | | |" >> "$out"
            else
                step nvprof "PyTorch 1.13 pipeline" "$n" 0 /usr/bin/python3 "$here/torch_pipeline.py" "$W/run.db"
                awk -v s="$size" -v ti="$T_nvproftrace_ingest" -v ta="$T_nvproftrace_analyze" -v tp="$T_nvprofPyTorch_1_13_pipeline" \
                    -v ri="$R_nvproftrace_ingest" -v rp="$R_nvprofPyTorch_1_13_pipeline" 'BEGIN {
                    printf "| %s | nvprof | ratio PyTorch / (ingest + analyze) | %.1fx time | | | | %.1fx memory |\n",
                        s, tp / (ti + ta), rp / ri }' >> "$out"
            fi
        fi
        # the table from the ingest-time aggregates, and from a scan of every event, against
        # sqlite3's GROUP BY over the same events
        awk -v s="$size" -v f="$fmt" -v a="$(eval echo "\$T_${fmt}trace_analyze")" \
            -v sc="$(eval echo "\$T_${fmt}trace_analyze__scanning_the_events")" \
            -v q="$(eval echo "\$T_${fmt}sqlite3_GROUP_BY__floor_")" 'BEGIN {
            if (q > 0) printf "| %s | %s | ratio analyze / sqlite3 GROUP BY | %.2fx (aggregates), %.2fx (scanning) | | | | |\n",
                s, f, a / q, sc / q }' >> "$out"
    done
    if [ "$STACKS" -gt 0 ] && [ "$size" -le "$STACKS_MAX" ]; then
        # the ingest must run where gen-raw ran: the frames are named from the files it mapped
        "$BIN/gen-raw" -n "$size" --stacks "$STACKS" -o "$W/t.ctr"
        bytes=$(stat -c %s "$W/t.ctr")
        rm -f "$W/run.db"
        step "raw --backtrace" "trace-ingest" 0 "$bytes" "$BIN/trace-ingest" -q -o "$W/run.db" "$W/t.ctr"
        n=$(sqlite3 "$W/run.db" 'SELECT count(*) FROM events')
        set_events "$n" "$bytes"
    fi
    rm -f "$W/t.nvvp" "$W/t.json" "$W/t.ctr" "$W/run.db"
done

# The flamegraph's SVG step alone, in MB/s of folded input, as inferno publishes its own
# (38 MiB/s): a folded file of many distinct stacks (a profile's, not the generators'
# few), drawn by --folded.  Deterministic: the same file every run.
if [ "$FOLDED_LINES" -gt 0 ]; then
    size=$FOLDED_LINES
    awk -v n="$FOLDED_LINES" 'BEGIN {
        srand(7)
        for (i = 0; i < n; i++) {
            d = 4 + int(rand() * 20); line = "main"
            for (k = 0; k < d; k++) line = line ";" sprintf("ns%d::Module%d::forward(at::Tensor const&, long)", int(rand() * 8), int(rand() * (k < 3 ? 6 : 300)))
            print line, 1 + int(rand() * 100000)
        }
    }' > "$W/t.folded"
    fbytes=$(stat -c %s "$W/t.folded")
    step "folded" "SVG from folded stacks (--flamegraph --folded)" 0 "$fbytes" \
        "$BIN/trace-export" --flamegraph --folded -o "$W/out" "$W/t.folded"
    rm -f "$W/t.folded" "$W/out"
fi

# Many ranks: a data-parallel job of RANKS synthetic Kineto files (gen-kineto -r), each
# ingested on its own, two at a time (docs/scale-out.md), then analysed together; beside
# one trace-ingest of every file and the analysis of that one run.db.  The merged
# analysis holds the groups, not the events: its RSS is also shown for 8 of the ranks.
if [ "$RANKS" -gt 0 ]; then
    size="${RANKS}x$RANK_EVENTS"
    fmt="kineto, $RANKS ranks"
    echo "bench: $RANKS ranks of $RANK_EVENTS events" >&2
    rm -rf "$W/ranks" && mkdir -p "$W/ranks/dbs"
    "$BIN/gen-kineto" -r "$RANKS" -n "$RANK_EVENTS" -o "$W/ranks/rank" >/dev/null
    # zero-padded names keep the shell's order the rank order
    for f in "$W"/ranks/rank*.json; do
        r=${f##*/rank}; r=${r%.json}
        mv "$f" "$W/ranks/$(printf 'r%05d' "$r").json"
    done
    rbytes=$(cat "$W"/ranks/r*.json | wc -c)
    step "$fmt" "per-rank trace-ingest, xargs -P 2 (peak RSS: one process)" 0 "$rbytes" sh -c \
        "printf '%s\n' '$W'/ranks/r*.json | xargs -P 2 -n 1 sh -c '\"\$0\" -q -o \"\${1%.json}.db\" \"\$1\"' '$BIN/trace-ingest'"
    mv "$W"/ranks/r*.db "$W/ranks/dbs/" 2>/dev/null
    rn=$(for d in "$W"/ranks/dbs/*.db; do sqlite3 "$d" 'SELECT count(*) FROM events'; done | awk '{ s += $1 } END { print s + 0 }')
    set_events "$rn" "$rbytes"
    step "$fmt" "trace-analyze of the $RANKS run.dbs" "$rn" 0 sh -c "'$BIN/trace-analyze' -n -1 '$W'/ranks/dbs/*.db > '$W/ranks/merged.txt'"
    if [ "$RANKS" -gt 8 ]; then
        step "$fmt" "trace-analyze of 8 of the run.dbs" 0 0 sh -c \
            "'$BIN/trace-analyze' -n -1 \$(ls '$W'/ranks/dbs/*.db | head -n 8) > /dev/null"
    fi
    step "$fmt" "one trace-ingest of every rank" "$rn" "$rbytes" sh -c "'$BIN/trace-ingest' -q -o '$W/ranks/all.db' '$W'/ranks/r*.json"
    step "$fmt" "trace-analyze of that one run.db" "$rn" 0 sh -c "'$BIN/trace-analyze' -n -1 '$W/ranks/all.db' > '$W/ranks/one.txt'"
    if cmp -s "$W/ranks/merged.txt" "$W/ranks/one.txt"; then same="yes, byte for byte"; else same="NO: they differ"; fi
    echo "| $size | $fmt | merged table = one run.db's table | $same | | | | |" >> "$out"
    rm -rf "$W/ranks"
fi

# Ingest's peak memory where it matters most: the largest sizes, ingest only.
for size in $RSS_SIZES; do
    echo "bench: $size events, ingest peak RSS" >&2
    yardstick
    for fmt in nvprof nsys kineto raw; do
        make_input "$fmt" "$size"
        bytes=$(stat -c %s "$in")
        step "$fmt" "trace-ingest" 0 "$bytes" "$BIN/trace-ingest" -q -o "$W/run.db" "$in"
        if [ -f "$W/run.db" ]; then
            n=$(sqlite3 "$W/run.db" 'SELECT count(*) FROM events')
            set_events "$n" "$bytes"
            dbsize "$fmt" "$n"
        fi
        rm -f "$W/run.db"
        step "$fmt" "$IN_MEMORY" 0 "$bytes" "$BIN/trace-ingest" --max-memory "$HALF_RAM" -q -o "$W/run.db" "$in"
        rm -f "$W/run.db" "$in"
    done
done

# The largest real trace at hand, end to end.
if [ -n "$BENCH_REAL" ] && [ -f "$BENCH_REAL" ]; then
    size=real
    fmt=$(basename "$BENCH_REAL")
    echo "bench: $fmt end to end" >&2
    bytes=$(stat -c %s "$BENCH_REAL")
    rm -f "$W/run.db"
    step "$fmt" "trace-ingest" 0 "$bytes" "$BIN/trace-ingest" -q -o "$W/run.db" "$BENCH_REAL"
    if [ -f "$W/run.db" ]; then
        n=$(sqlite3 "$W/run.db" 'SELECT count(*) FROM events')
        echo "| real | $fmt | events | $n | | | | |" >> "$out"
        step "$fmt" "trace-analyze" "$n" 0 sh -c "'$BIN/trace-analyze' '$W/run.db' > /dev/null"
        step "$fmt" "trace-analyze --report summary,gpu-time,kernels" "$n" 0 \
            sh -c "'$BIN/trace-analyze' --report summary,gpu-time,kernels '$W/run.db' > /dev/null 2>&1"
        step "$fmt" "trace-export --flamegraph" "$n" 0 "$BIN/trace-export" --flamegraph -o "$W/out" "$W/run.db"
        step "$fmt" "trace-export --chrome" "$n" 0 "$BIN/trace-export" --chrome -o "$W/out" "$W/run.db"
        step "$fmt" "trace-export --html" "$n" 0 "$BIN/trace-export" --html -o "$W/out" "$W/run.db"
        rm -f "$W/out" "$W/run.db"
    fi
fi

# The recorder's own cost, measurable without a GPU: fake_app (record/tests) plays
# a one-thread CUDA program whose every iteration is an NVTX range around a kernel
# launch.  Recorded, its fake libcupti fills the activity records in the program's
# thread, standing in for CUPTI, and hands full buffers to the agent, whose writer
# thread encodes, checksums and writes them; bare, nothing is subscribed and the
# fake builds no records.  So "over bare" is the agent's cost plus a stand-in for
# CUPTI's; CUPTI's real cost needs a GPU.  Each row is the best of 3 runs.
REC=$BIN/../rec
if [ -x "$REC/fake_app" ] && [ -x "$BIN/trace-record" ] && [ "$RECORD_ITERS" -gt 0 ]; then
    echo "bench: recorder, $RECORD_ITERS launches" >&2
    {
        echo
        echo "## The recorder's own cost (fake CUPTI, no GPU)"
        echo
        echo "fake_app -n $RECORD_ITERS: one thread, each iteration an NVTX range around a kernel launch"
        echo "(3 events an iteration). Recorded, a fake libcupti fills the activity records in the program's"
        echo "thread in place of CUPTI; the agent's writer thread encodes, checksums and writes them"
        echo "(\`--raw-only\`: no ingest). Best of 3 runs; \"over bare\" is per launch."
        echo
        echo "| run | seconds | CPU s | wall µs over bare | CPU µs over bare | raw MB | peak RSS MB |"
        echo "|---|---:|---:|---:|---:|---:|---:|"
    } >> "$out"
    # rec_row NAME COMMAND...: best of 3 by wall time; the first row is the bare one
    rec_row() {
        name=$1
        shift
        bw='' bc='' br=''
        for _ in 1 2 3; do
            rm -rf "$W/rec.db.raw"
            "$BIN/measure" -o "$W/m" "$@" >/dev/null 2>"$W/err"
            read -r wall rss code cpu < "$W/m"
            if [ "$code" != 0 ]; then
                echo "| $name | failed (exit $code) | | | | | |" >> "$out"
                return
            fi
            if [ -z "$bw" ] || awk -v a="$wall" -v b="$bw" 'BEGIN { exit !(a < b) }'; then
                bw=$wall bc=$cpu br=$rss
            fi
        done
        mb=$(du -sm "$W/rec.db.raw" 2>/dev/null | cut -f1)
        [ -z "${bare_w:-}" ] && bare_w=$bw bare_c=$bc
        awk -v nm="$name" -v w="$bw" -v c="$bc" -v r="$br" -v bw="$bare_w" -v bc="$bare_c" \
            -v n="$RECORD_ITERS" -v mb="${mb:-}" 'BEGIN {
            printf "| %s | %.2f | %.2f | %.2f | %.2f | %s | %.1f |\n", nm, w, c,
                (w - bw) * 1e6 / n, (c - bc) * 1e6 / n, mb, r / 1024 }' >> "$out"
    }
    bare_w=''
    rec_row "bare (no recorder)" "$REC/fake_app" -n "$RECORD_ITERS"
    rec_row "trace-record --raw-only" "$BIN/trace-record" --raw-only -o "$W/rec.db" "$REC/fake_app" -n "$RECORD_ITERS"
    rec_row "trace-record --raw-only --backtrace" "$BIN/trace-record" --raw-only --backtrace -o "$W/rec.db" \
        "$REC/fake_app" -n "$RECORD_ITERS"
    rm -rf "$W/rec.db.raw"
fi

size=end
yardstick

# Against the goals of the speed work: the first benchmark's figures (bench/RESULTS.md
# of 2026-11-22, the same machine class) beside this run's, measured above.
{
    echo
    echo "## Against the goals"
    echo
    echo "| what | events | first benchmark | this run | goal |"
    echo "|---|---:|---|---|---|"
    awk -F '\t' -v mem="$IN_MEMORY" '
    { k = $1 SUBSEP $2 SUBSEP $3; wall[k] = $4; cpu[k] = $5; rss[k] = $6; n[k] = $7; by[k] = $8
      if ($1 ~ /^[0-9]+$/) sizes[$1] = 1
      if ($2 == "yardstick") {
          if (!($3 in yard)) yards[++nyards] = $3
          yard[$3] = yard[$3] (yard[$3] == "" ? "" : ", ") sprintf("%s: %.2f s", $1, $4)
      } }
    function has(s, f, st) { return ((s SUBSEP f SUBSEP st) in wall) }
    function w(s, f, st) { return wall[s SUBSEP f SUBSEP st] }
    function r(s, f, st) { return rss[s SUBSEP f SUBSEP st] / 1024 }
    function row(what, s, before, now, goal) { printf "| %s | %s | %s | %s | %s |\n", what, s, before, now, goal }
    END {
        ns = 0; for (s in sizes) list[++ns] = s + 0
        for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
        nef = split("nvprof nsys raw", ef, " ")
        base["nvprof", 1000000] = "0.56M/s"; base["nvprof", 10000000] = "0.42M/s"
        base["raw", 1000000] = "0.55M/s"
        for (i = 1; i <= ns; i++) for (e = 1; e <= nef; e++) {
            s = list[i]; f = ef[e]
            if (!has(s, f, "trace-ingest") || w(s, f, "trace-ingest") <= 0) continue
            k = s SUBSEP f SUBSEP "trace-ingest"
            per_cpu = cpu[k] > 0 ? sprintf(" (%.2fM per CPU second)", n[k] / cpu[k] / 1e6) : ""
            row(f " ingest, events/s", s, ((f, s) in base) ? base[f, s] : "", sprintf("%.2fM/s", n[k] / w(s, f, "trace-ingest") / 1e6) per_cpu, ">= 1M/s per core")
        }
        for (i = 1; i <= ns; i++) {
            s = list[i]
            if (!has(s, "kineto", "trace-ingest") || w(s, "kineto", "trace-ingest") <= 0) continue
            b = (s == 1000000) ? "97 MB/s" : (s == 10000000) ? "80 MB/s" : ""
            row("Kineto JSON ingest, MB/s", s, b, sprintf("%.0f MB/s", by[s SUBSEP "kineto" SUBSEP "trace-ingest"] / 1e6 / w(s, "kineto", "trace-ingest")), ">= 200 MB/s")
        }
        naf = split("nvprof nsys kineto raw", af, " ")
        for (i = 1; i <= ns; i++) for (e = 1; e <= naf; e++) {
            s = list[i]; f = af[e]
            if (s < 1000000 || !has(s, f, "trace-ingest")) continue
            b = (f == "nvprof" && s == 1000000) ? "217 MB" : (f == "nvprof" && s == 10000000) ? "2227 MB" : ""
            row(f " ingest, peak RSS and time (default limit: 256 MiB)", s, b,
                sprintf("%.0f MB, %.2f s", r(s, f, "trace-ingest"), w(s, f, "trace-ingest")), "<= 256 MB, flat")
            if (has(s, f, mem))
                row(f " ingest in memory (--max-memory half the RAM), peak RSS and time", s, "",
                    sprintf("%.0f MB, %.2f s", r(s, f, mem), w(s, f, mem)), "")
        }
        for (i = 1; i <= ns; i++) {
            s = list[i]
            if (s < 1000000) continue
            if (has(s, "nvprof", "trace-analyze"))
                row("trace-analyze (default table), nvprof", s, s == 10000000 ? "7.51 s" : s == 1000000 ? "0.68 s" : "", sprintf("%.2f s", w(s, "nvprof", "trace-analyze")), "< 0.5 s at 10^7")
            if (has(s, "nvprof", "trace-analyze --group-by-stack 3") && has(s, "nvprof", "sqlite3 GROUP BY (floor)"))
                row("trace-analyze --group-by-stack 3, nvprof (aggregates; scanning)", s, "",
                    sprintf("%.2f s; %.2f s (sqlite3 GROUP BY: %.2f s)", w(s, "nvprof", "trace-analyze --group-by-stack 3"),
                            w(s, "nvprof", "trace-analyze --group-by-stack 3, scanning the events"), w(s, "nvprof", "sqlite3 GROUP BY (floor)")),
                    "within 1.0x of the sqlite3 floor")
            if (has(s, "nvprof", "trace-export --chrome"))
                row("trace-export --chrome, nvprof", s, s == 10000000 ? "52.0 s" : s == 1000000 ? "4.90 s" : "", sprintf("%.2f s", w(s, "nvprof", "trace-export --chrome")), "a third of the first")
            if (has(s, "nvprof", "PyTorch 1.13 pipeline") && has(s, "nvprof", "trace-ingest") && has(s, "nvprof", "trace-analyze")) {
                t = w(s, "nvprof", "trace-ingest") + w(s, "nvprof", "trace-analyze")
                row("PyTorch 1.13 pipeline / ingest + analyze", s, s == 1000000 ? "13.6x time, 6.0x memory" : "",
                    sprintf("%.1fx time, %.1fx memory", w(s, "nvprof", "PyTorch 1.13 pipeline") / t, r(s, "nvprof", "PyTorch 1.13 pipeline") / r(s, "nvprof", "trace-ingest")), ">= 50x time, >= 10x memory")
            }
        }
        for (i = 1; i <= nyards; i++)
            row("yardstick, " yards[i] " (before each size; end: after the last)", "", "", yard[yards[i]], "the same work: compare runs where it agrees")
    }' "$log"
} >> "$out"

cat "$out"
if [ "${BENCH_SMOKE:-0}" = 1 ]; then
    # every step must have run: a failed one is a broken benchmark
    if grep -q 'failed (exit' "$out"; then
        echo "bench smoke: a step failed" >&2
        exit 1
    fi
    echo "bench smoke: $(grep -c '^| [0-9]' "$out") steps ran" >&2
    exit 0
fi
cp "$out" "$root/bench/RESULTS.md"
