# The reports and exports that spread their work over two threads (several reports
# at once, the summary's and advice's GPU scans, the HTML report's sections, the
# chrome and events exports' readers) must print the same bytes, messages and exit
# status as on one thread (TR_ONE_THREAD=1: no second connection, so all of it runs
# on the calling thread, in the order one thread does it).
inputs="$GOLDEN_DIR/../../../sample-traces/lm-step.nvvp"
for w in sched attn fork; do
    f="$GOLDEN_DIR/../../oracle/real/golden/$w/trace_kineto.json"
    [ -f "$f" ] && inputs="$inputs $f"
done
if [ -n "$TRACES" ]; then
    for f in "$TRACES"/kineto/*.json* "$TRACES"/nsys/*.sqlite; do
        [ -f "$f" ] && inputs="$inputs $f"
    done
fi
# generated: a training loop with GPU work, and a 4-rank job with steps and collectives
"$BIN/gen-nvprof" -n 20000 -s 5 -o gen.nvvp >/dev/null || fail "gen-nvprof"
"$BIN/gen-kineto" -r 4 -n 3000 -s 7 -o rank >/dev/null || fail "gen-kineto -r 4"
inputs="$inputs $PWD/gen.nvvp"

# same NAME CMD...: CMD's output with and without TR_ONE_THREAD=1
same() {
    name=$1
    shift
    "$@" >two.out 2>two.err
    a=$?
    TR_ONE_THREAD=1 "$@" >one.out 2>one.err
    b=$?
    [ "$a" = "$b" ] || fail "$name: exit $a on two threads, $b on one: $*"
    cmp -s one.out two.out || { fail "$name: output differs between one and two threads: $*"; diff one.out two.out | head -5 >&2; }
    cmp -s one.err two.err || { fail "$name: messages differ between one and two threads: $*"; diff one.err two.err | head -5 >&2; }
}

n=0
"$BIN/trace-ingest" -q -o ranks.db rank*.json || fail "trace-ingest of the ranks"
for f in $inputs ranks.db; do
    n=$((n + 1))
    db=$f
    case $f in
    *.db) ;;
    *) db=t$n.db; "$BIN/trace-ingest" -q -o "$db" "$f" 2>/dev/null || continue ;;
    esac
    same "$f" "$BIN/trace-analyze" --report summary "$db"
    same "$f" "$BIN/trace-analyze" --report advice --format json "$db"
    same "$f" "$BIN/trace-analyze" --report summary,gpu-time,kernels,api,memcpy,nvtx,launch,gaps,steps,advice "$db"
    same "$f" "$BIN/trace-analyze" --report summary,gpu-time,kernels,api,launch,advice,critical-path --format csv --step 1 "$db"
    same "$f" "$BIN/trace-analyze" --report summary,advice --time-range 1ms: --include 'a' "$db"
    same "$f" "$BIN/trace-export" --html -o - "$db"
    same "$f" "$BIN/trace-export" --chrome -o - "$db"
    same "$f" "$BIN/trace-export" --events --format csv -o - "$db"
done
same ranks "$BIN/trace-analyze" --report summary,advice --rank 1 ranks.db
same ranks "$BIN/trace-export" --html --rank 2-3 -o - ranks.db
# a damaged run database (a page of the events table overwritten): the reports ahead
# of the first failure, then that failure, as one thread meets them
cp t1.db bad.db && head -c 16384 /dev/zero | tr '\0' '\377' \
    | dd of=bad.db bs=16384 seek=14 conv=notrunc 2>/dev/null || fail "damaging a copy"
same damaged "$BIN/trace-analyze" --report summary,advice,gaps bad.db
same damaged "$BIN/trace-export" --html -o - bad.db
[ "$n" -ge 5 ] || fail "only $n inputs"
