# The default tables read the aggregates written at ingest instead of every event, and
# --group-by-stack the stack aggregates (per tree path and recorded stack): byte for
# byte the same output as the scan (TR_NO_AGGREGATES=1) on every input we have, and
# the scans decoding run.db's pages (trace-analyze's, trace-export's) the same as
# stepping SQLite (TR_NO_PAGE_READ=1).
# TR_AGGREGATES_MIN=0: use them however small the run (the default waits for 200,000 events).
export TR_AGGREGATES_MIN=0
inputs="$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
for d in "$GOLDEN_DIR"/../../oracle/real/golden/*/; do
    [ -f "$d/trace_kineto.json" ] && inputs="$inputs $d/trace_kineto.json"
done
if [ -n "$TRACES" ]; then
    for f in "$TRACES"/kineto/*.json* "$TRACES"/nsys/*.sqlite "$TRACES"/nvprof/*; do
        [ -f "$f" ] && inputs="$inputs $f"
    done
fi
# and generated traces of every format, two seeds each: workloads no golden was made from
for seed in 3 11; do
    "$BIN/gen-kineto" -n 4000 -s $seed -o "gen-k$seed.json" >/dev/null \
        && "$BIN/gen-nvprof" -n 4000 -s $seed -o "gen-n$seed.nvvp" >/dev/null \
        && "$BIN/gen-nvprof" -f nsys -n 4000 -s $seed -o "gen-s$seed.sqlite" >/dev/null \
        && "$BIN/gen-raw" -n 4000 -s $seed -o "gen-r$seed.ctr" >/dev/null || fail "generators, seed $seed"
    inputs="$inputs $PWD/gen-k$seed.json $PWD/gen-n$seed.nvvp $PWD/gen-s$seed.sqlite $PWD/gen-r$seed.ctr"
done
n=0
for f in $inputs; do
    n=$((n + 1))
    "$BIN/trace-ingest" -q -o "a$n.db" "$f" 2>/dev/null || continue
    [ "$(q "a$n.db" 'select count(*) from events')" = 0 ] \
        || [ "$(q "a$n.db" 'select count(*) from aggregates')" -gt 0 ] || fail "$f: no aggregates written"
    # a table of stack rows about as many as the events is left out (the scan is as quick)
    [ "$(q "a$n.db" "select count(*) from sqlite_master where name = 'stack_aggregates'")" = 0 ] \
        || [ "$(q "a$n.db" 'select count(*) from events')" = 0 ] \
        || [ "$(q "a$n.db" 'select count(*) from stack_aggregates')" -gt 0 ] || fail "$f: no stack aggregates"
    for args in "" "--group-by-shape" "--sort none" "--sort cpu_time_total" "--sort count -n 5" \
                "--format csv -n -1" "--format json -n -1 --group-by-shape" "--format markdown" \
                "--group-by-stack 1" "--group-by-stack 3 --group-by-shape -n -1" \
                "--group-by-stack 50 --stack-source tree --format csv -n -1" \
                "--group-by-stack 2 --stack-source frames --sort count --format json -n -1"; do
        # shellcheck disable=SC2086
        "$BIN/trace-analyze" $args "a$n.db" > agg.out 2>agg.err
        # shellcheck disable=SC2086
        TR_NO_AGGREGATES=1 "$BIN/trace-analyze" $args "a$n.db" > scan.out 2>scan.err
        cmp -s agg.out scan.out && cmp -s agg.err scan.err || {
            fail "$(basename "$f") $args: aggregates and scan differ"
            diff scan.out agg.out | head -6 >&2
        }
        # the scan reads run.db's pages itself; stepping SQLite instead gives the same
        # (for the argument sets that read other columns or pass over the tree; the
        # formats and sorts change nothing in what is read)
        case "$args" in
        "" | "--group-by-stack 3 --group-by-shape -n -1" | "--group-by-stack 50 --stack-source tree"* \
            | "--group-by-stack 2 --stack-source frames"*) ;;
        *) continue ;;
        esac
        # shellcheck disable=SC2086
        TR_NO_PAGE_READ=1 TR_NO_AGGREGATES=1 "$BIN/trace-analyze" $args "a$n.db" > step.out 2>step.err
        cmp -s step.out scan.out && cmp -s step.err scan.err || {
            fail "$(basename "$f") $args: the scan from the pages and through SQLite differ"
            diff step.out scan.out | head -6 >&2
        }
    done
    # trace-export's reader of every event too: stacks, their metrics, the memory
    # columns, and the chrome trace's selection (the merged redispatches included)
    for args in "--stacks --metric count" "--flamegraph --metric self_gpu" "--stacks --metric self_cpu_mem" \
                "--chrome --include ."; do
        # shellcheck disable=SC2086
        "$BIN/trace-export" $args -o page.out "a$n.db" 2>page.err
        a=$?
        # shellcheck disable=SC2086
        TR_NO_PAGE_READ=1 "$BIN/trace-export" $args -o step.out "a$n.db" 2>step.err
        b=$?
        [ "$a" = "$b" ] && cmp -s page.out step.out && cmp -s page.err step.err \
            || fail "$(basename "$f") trace-export $args: from the pages and through SQLite differ"
    done
    rm -f "a$n.db"
done
[ "$n" -gt 0 ] || fail "no inputs"
# a run.db without the table (an earlier build) is read by the scan
"$BIN/trace-ingest" -q -o old.db "$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
"$BIN/trace-analyze" old.db > with.out
q old.db 'DROP TABLE aggregates'
expect_status 0 "$BIN/trace-analyze" old.db
cmp -s with.out "$TMP/out" || fail "a run.db without aggregates gives another table"
# the same for the stack aggregates; the sample's tree has them
[ "$(q old.db 'select count(*) from stack_paths')" -gt 0 ] || fail "the sample has no stack paths"
"$BIN/trace-analyze" --group-by-stack 3 old.db > with.out
q old.db 'DROP TABLE stack_aggregates; DROP TABLE stack_paths'
expect_status 0 "$BIN/trace-analyze" --group-by-stack 3 old.db
cmp -s with.out "$TMP/out" || fail "a run.db without stack aggregates gives another table"
