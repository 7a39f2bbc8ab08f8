#!/bin/sh
# run_gpu.sh - checks trace-record on a machine with a GPU, and measures its overhead.
#
# usage: record/tests/gpu/run_gpu.sh [BUILD_DIR]      (from the repository root)
#   BUILD_DIR  holds bin/trace-record, bin/trace-ingest, lib/libtracekit-agent.so
#              (default build; `make BUILD=...` there first, or carry one built elsewhere)
#   OUT        directory for the summaries (default /tmp/trace-record-gpu)
#   ITERS      counts.cu iterations for the count checks (default 100)
#   BENCH_ITERS counts.cu iterations for the overhead runs (default 5000)
#   PYTHON     python with torch (default python3); the PyTorch part is skipped without torch
#
# Part A checks counts.cu's exact counts, capture ranges, SIGTERM, stacks and the
# overhead; part C (checks.cu) copies joined to their runtime call, the clock, a
# polling loop and internal launches; part B PyTorch with emit_nvtx, against
# torch.profiler, and torch.profiler inside trace-record.
# Writes to OUT: summary.txt (every check and timing), and the small JSON files of
# the PyTorch runs.  Exit status 1 if any count check failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUT=${OUT:-/tmp/trace-record-gpu}
ITERS=${ITERS:-100}
BENCH_ITERS=${BENCH_ITERS:-5000}
PY=${PYTHON:-python3}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
REC=$B/bin/trace-record
mkdir -p "$OUT"
W=$(mktemp -d)
S=$OUT/summary.txt
: > "$S"
say() { echo "$*" | tee -a "$S"; }
failed=0

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /' | tee -a "$S"
[ -x "$REC" ] || { say "trace-record not found in $B/bin"; exit 2; }

# libcupti: the agent finds it by soname; say which file resolves, and help the
# C programs find one when the toolkit path baked into the agent has none.
cupti=$(ldd "$B/lib/libtracekit-agent.so" | sed -n 's/.*libcupti.so.13 => \([^ ]*\).*/\1/p')
if [ -z "$cupti" ] || [ ! -e "$cupti" ]; then
    alt=$($PY -c 'import nvidia, os; d = os.path.join(os.path.dirname(nvidia.__path__[0]), "nvidia", "cu13", "lib"); print(d)' 2>/dev/null)
    [ -n "$alt" ] && [ -e "$alt/libcupti.so.13" ] && export LD_LIBRARY_PATH="$alt${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    cupti=$(ldd "$B/lib/libtracekit-agent.so" | sed -n 's/.*libcupti.so.13 => \([^ ]*\).*/\1/p')
fi
say "agent resolves libcupti.so.13 to: ${cupti:-NOTHING}"

# ---------------------------------------------------------------- A. CUDA C program
"$NVCC" -O2 -arch=sm_90 -lineinfo "$here/counts.cu" -o "$W/counts_static" || exit 2
"$NVCC" -O2 -arch=sm_90 -lineinfo -cudart shared "$here/counts.cu" -o "$W/counts_shared" || exit 2
for v in static shared; do
    exp=$("$W/counts_$v" "$ITERS") || { say "counts_$v failed to run bare"; failed=1; continue; }
    "$REC" -o "$W/$v.db" "$W/counts_$v" "$ITERS" > /dev/null 2> "$W/$v.err"
    rc=$?
    say "== counts_$v: trace-record exit $rc"
    sed 's/^/   /' "$W/$v.err" | tee -a "$S"
    grep -a -o 'libcupti=[^[:cntrl:]]*' "$W/$v.db.raw/"*.ctr 2>/dev/null | head -1 | sed 's/^/   mapped /' | tee -a "$S"
    grep -q "dropped" "$W/$v.err" && { say "   FAIL dropped records"; failed=1; }
    grep -q "no end marker" "$W/$v.err" && { say "   FAIL no END chunk after a normal exit"; failed=1; }
    # alone in the process, every buffer handed to CUPTI must come back at the final flush
    grep -q "took over" "$W/$v.err" && { say "   FAIL a takeover reported with no other CUPTI client"; failed=1; }
    grep -q "failed: CUPTI_ERROR" "$W/$v.err" && { say "   FAIL a CUPTI call failed"; failed=1; }
    $PY "$here/check_counts.py" "$W/$v.db" "$exp" | tee -a "$S" | grep -q FAIL && failed=1
done
# capture range from cudaProfilerStart/Stop: iterations [10, 20) -> 20 kernels
"$REC" -o "$W/cap.db" --capture-range cudaProfilerApi "$W/counts_static" "$ITERS" --profiler > /dev/null 2>> "$S"
say "== --capture-range cudaProfilerApi"
$PY "$here/check_counts.py" "$W/cap.db" '{}' --capture 20 | tee -a "$S" | grep -q FAIL && failed=1
# capture range from an nvtxRangeStartA/End pair around the same iterations
"$REC" -o "$W/se.db" --nvtx-capture window "$W/counts_static" "$ITERS" --start-end > /dev/null 2>> "$S"
say "== --nvtx-capture window (nvtxRangeStartA/End)"
$PY "$here/check_counts.py" "$W/se.db" '{}' --capture 20 | tee -a "$S" | grep -q FAIL && failed=1
# the same window named by a wide string, and by a registered string in a domain
for form in wide registered; do
    "$REC" -o "$W/se-$form.db" --nvtx-capture window "$W/counts_static" "$ITERS" --start-end --$form > /dev/null 2>> "$S"
    say "== --nvtx-capture window ($form)"
    $PY "$here/check_counts.py" "$W/se-$form.db" '{}' --capture 20 | tee -a "$S" | grep -q FAIL && failed=1
done
# SIGTERM: the agent finishes the file, then the program dies of the signal
exp=$("$W/counts_static" "$ITERS" --term)
"$REC" -o "$W/term.db" "$W/counts_static" "$ITERS" --term > /dev/null 2> "$W/term.err"
rc=$?
say "== SIGTERM at the end: trace-record exit $rc (expected 143)"
[ $rc = 143 ] || failed=1
grep -q "no end marker\|did not exit normally" "$W/term.err" && { say "   FAIL no END chunk after SIGTERM"; failed=1; }
$PY "$here/check_counts.py" "$W/term.db" "$exp" | tee -a "$S" | grep -q FAIL && failed=1
# stacks on launches
"$REC" -o "$W/bt.db" --backtrace "$W/counts_static" "$ITERS" > /dev/null 2>> "$S"
say "== --backtrace: launches with a stack (expected $((2 * ITERS))): $($PY -c "
import sqlite3; c = sqlite3.connect('$W/bt.db')
print(c.execute(\"SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE e.kind = 4 AND s.value LIKE '__cudaLaunchKernel%' AND e.stack_id IS NOT NULL\").fetchone()[0])
for (v,) in c.execute('SELECT DISTINCT s.value FROM stack_nodes n JOIN strings s ON s.id = n.frame_id LIMIT 8'): print('   frame', v)")"
# symbolised at ingest: every launch stack passes through main()
through_main=$($PY -c "
import sqlite3; c = sqlite3.connect('$W/bt.db')
print(c.execute('WITH RECURSIVE under(id) AS ('
    'SELECT n.id FROM stack_nodes n JOIN strings s ON s.id = n.frame_id WHERE s.value = \'main\' '
    'UNION SELECT c.id FROM stack_nodes c JOIN under u ON c.parent_id = u.id) '
    'SELECT count(*) FROM events WHERE kind = 4 AND stack_id IN under').fetchone()[0])")
say "   launches whose stack passes through main(): $through_main (expected $((2 * ITERS)))"
[ "$through_main" = $((2 * ITERS)) ] || failed=1

# overhead: bare vs recorded, 3 runs each, median wall time
median3() { sort -n | sed -n 2p; }
wall() { s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc; }
for v in static; do
    bare=$(for i in 1 2 3; do wall "$W/counts_$v" "$BENCH_ITERS"; done | median3)
    rec=$(for i in 1 2 3; do wall "$REC" -o "$W/bench.db" --raw-only "$W/counts_$v" "$BENCH_ITERS"; done | median3)
    full=$(for i in 1 2 3; do wall "$REC" -o "$W/bench.db" "$W/counts_$v" "$BENCH_ITERS"; done | median3)
    say "== overhead counts_$v $BENCH_ITERS iters: bare ${bare}s, recorded (raw only) ${rec}s, recorded + ingest ${full}s, ratio $(echo "scale=3; $rec / $bare" | bc)"
    say "   raw bytes: $(cat "$W/bench.db.raw/"*.ctr | wc -c) for $((2 * BENCH_ITERS)) kernels"
    rm -rf "$W/bench.db.raw"
done

# ---------------------------------------------------------------- C. joins, polling, internal launches
"$NVCC" -O2 -arch=sm_90 "$here/checks.cu" -o "$W/checks" || exit 2
# the timestamps: kernels of the run lie between its start and its end
t_before=$(date +%s)
"$REC" -o "$W/mc.db" "$W/checks" memcpy 50 > /dev/null 2> "$W/mc.err"
t_after=$(date +%s)
say "== copies (100 cudaMemcpy): trace-record exit $?"
sed 's/^/   /' "$W/mc.err" | tee -a "$S"
$PY - "$W/mc.db" "$t_before" "$t_after" <<'PYEOF' | tee -a "$S" | grep -q FAIL && failed=1
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); t0, t1 = int(sys.argv[2]), int(sys.argv[3]) + 1
one = lambda q: c.execute(q).fetchone()[0]
n = one("SELECT count(*) FROM events WHERE kind = 8")
unjoined = one("SELECT count(*) FROM events m WHERE m.kind = 8 AND NOT EXISTS (SELECT 1 FROM events a "
               "JOIN strings s ON s.id = a.name_id WHERE a.kind = 4 AND a.correlation = m.correlation "
               "AND s.value LIKE 'cudaMemcpy%')")
lo, hi = c.execute("SELECT min(start_ns) / 1e9, max(end_ns) / 1e9 FROM events").fetchone()
print(f"   memcpy {n} (expected 100), not joined to a runtime cudaMemcpy: {unjoined} (expected 0)"
      f" {'ok' if n == 100 and unjoined == 0 else 'FAIL'}")
print(f"   event times {lo:.1f}..{hi:.1f} s within the run {t0}..{t1}: {'ok' if t0 <= lo and hi <= t1 else 'FAIL'}")
PYEOF
# a polling loop: its queries are folded, not waits, and the trace stays small
"$REC" -o "$W/poll.db" "$W/checks" poll > "$W/poll.out" 2> "$W/poll.err"
say "== polling loop: $(cat "$W/poll.out")"
sed 's/^/   /' "$W/poll.err" | tee -a "$S"
$PY - "$W/poll.db" <<'PYEOF' | tee -a "$S" | grep -q FAIL && failed=1
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); one = lambda q: c.execute(q).fetchone()[0]
syncs = one("SELECT count(*) FROM events WHERE kind = 6")
queries = one("SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value LIKE 'cudaStreamQuery%'")
print(f"   sync events {syncs} (expected 1: the cudaStreamSynchronize), query calls kept {queries} (expected 0)"
      f" {'ok' if syncs <= 1 and queries == 0 else 'FAIL'}")
PYEOF
grep -q "query record(s) folded" "$W/poll.err" || say "   note: no folded queries reported (CUPTI gave no query records?)"
"$REC" -o "$W/pollq.db" --kinds kernel,runtime,sync,query "$W/checks" poll > /dev/null 2> "$W/pollq.err"
say "== polling loop with --kinds query: $($PY -c "
import sqlite3; c = sqlite3.connect('$W/pollq.db')
print('query calls', c.execute(\"SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value LIKE 'cudaStreamQuery%'\").fetchone()[0],
      'sync events', c.execute('SELECT count(*) FROM events WHERE kind = 6').fetchone()[0])")"
# internal launches: every kernel has a launching call, internal or not
"$REC" -o "$W/il.db" "$W/checks" internal > /dev/null 2> "$W/il.err"
say "== internal launches: $($PY -c "
import sqlite3; c = sqlite3.connect('$W/il.db')
one = lambda q: c.execute(q).fetchone()[0]
print('kernels', one('SELECT count(*) FROM events WHERE kind = 7'),
      'internal launch calls', one(\"SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = '[internal launch]'\"),
      'kernels without a launching call', one('SELECT count(*) FROM events k WHERE k.kind = 7 AND NOT EXISTS (SELECT 1 FROM events a WHERE a.kind IN (4, 5) AND a.correlation = k.correlation)'))")"
sed 's/^/   /' "$W/il.err" | tee -a "$S"
# the STATUS of a normal run: nothing failed
for f in mc poll il; do
    grep -q "failed: CUPTI_ERROR" "$W/$f.err" && { say "   FAIL a CUPTI call failed in the $f run"; failed=1; }
done

# ---------------------------------------------------------------- B. PyTorch
if $PY -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    T=$here/torch_nvtx.py
    $PY "$T" --steps 20 --out "$OUT/torch_bare.json" || failed=1
    "$REC" -o "$W/torch.db" $PY "$T" --steps 20 --out "$OUT/torch_rec.json" 2> "$W/torch.err" || failed=1
    sed 's/^/   /' "$W/torch.err" | tee -a "$S"
    $PY "$T" --steps 20 --out "$OUT/torch_prof.json" --profiler "$W/kineto.json" || true
    # torch.profiler inside trace-record: Kineto takes CUPTI's buffers over; the
    # program must still end well, and the recorder and ingest must say so
    "$REC" -o "$W/torch_in.db" $PY "$T" --steps 20 --out "$OUT/torch_in.json" --profiler "$W/kineto_in.json" \
        > /dev/null 2> "$W/torch_in.err"
    rc=$?
    say "== torch.profiler inside trace-record: exit $rc (expected 0)"
    sed 's/^/   /' "$W/torch_in.err" | tee -a "$S"
    [ $rc = 0 ] || failed=1
    grep -q "trace truncated at .*another CUPTI client took over" "$W/torch_in.err" ||
        say "   note: no takeover reported (Kineto left the recorder's buffers alone?)"
    $PY - "$W/torch.db" "$OUT" "$W/kineto.json" <<'PYEOF' | tee -a "$S"
import json, sqlite3, statistics, sys
db, out, kineto = sys.argv[1], sys.argv[2], sys.argv[3]
c = sqlite3.connect(db)
one = lambda q: c.execute(q).fetchone()[0]
steps = c.execute("SELECT e.start_ns, e.end_ns FROM events e JOIN strings s ON s.id = e.name_id "
                  "WHERE e.kind = 1 AND s.value = 'step' ORDER BY e.start_ns").fetchall()
print(f"== torch: step ranges {len(steps)} (expected 20)")
print(f"   ops (aten:: with emit_nvtx annotations): {one('SELECT count(*) FROM events WHERE kind = 2')}")
print(f"   ops with shapes: {one('SELECT count(*) FROM events WHERE kind = 2 AND shape_id IS NOT NULL')}")
print(f"   kernels {one('SELECT count(*) FROM events WHERE kind = 7')}, memcpy {one('SELECT count(*) FROM events WHERE kind = 8')}, memset {one('SELECT count(*) FROM events WHERE kind = 9')}")
# kernels per step: kernels whose launch API call starts inside the step
per = []
for s, e in steps:
    per.append(one(f"SELECT count(*) FROM events k JOIN events a ON a.correlation = k.correlation "
                   f"AND a.kind IN (4, 5) WHERE k.kind = 7 AND a.start_ns >= {s} AND a.start_ns < {e}"))
print(f"   kernels per step: {per}")
try:
    kt = json.load(open(kineto))["traceEvents"]
    kk = sum(1 for ev in kt if ev.get("cat") == "kernel")
    ko = sum(1 for ev in kt if ev.get("cat") == "cpu_op")
    print(f"   torch.profiler: kernels {kk} ({kk / 20:.1f}/step), cpu_op {ko}")
except Exception as ex:
    print(f"   torch.profiler trace not read: {ex}")
def med(name):
    try:
        return statistics.median(json.load(open(f"{out}/torch_{name}.json"))["times"])
    except Exception:
        return float("nan")
b, r, p = med("bare"), med("rec"), med("prof")
print(f"   median step: bare {b*1e3:.3f} ms, trace-record {r*1e3:.3f} ms ({r/b:.3f}x), torch.profiler {p*1e3:.3f} ms ({p/b:.3f}x)")
PYEOF
else
    say "== torch with CUDA not available to $PY: PyTorch part skipped"
fi
rm -rf "$W"
say "result: $([ $failed = 0 ] && echo PASS || echo FAIL)"
exit $failed
