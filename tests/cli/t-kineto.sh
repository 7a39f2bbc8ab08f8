# PyTorch/Kineto chrome-trace reader: bad input, every shared trace, kernel totals.

# --- bad input: exit 3, one line naming the file, no output left behind ---
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2,}]}' >bad.json
expect_status 3 "$BIN/trace-ingest" -o bad.db bad.json
expect_one_line_error
expect_grep 'bad.json' "$TMP/err"
expect_grep 'offset=' "$TMP/err"
expect_no_file bad.db

printf '{"name": "not a trace", "values": [1, 2, 3]}\n' >other.json
expect_status 3 "$BIN/trace-ingest" -o other.db other.json
expect_one_line_error
expect_grep 'no traceEvents' "$TMP/err"
expect_no_file other.db

python3 - <<'PY'
import gzip, json
ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1000.5 + i,
       "dur": 0.75, "args": {"Input Dims": [[i, 4], [4, 8]]}} for i in range(3000)]
with gzip.open("trunc-src.json.gz", "wt") as f:
    json.dump({"traceEvents": ev}, f)
data = open("trunc-src.json.gz", "rb").read()
open("trunc.json.gz", "wb").write(data[: len(data) // 2])
PY
expect_status 0 "$BIN/trace-ingest" -q -o full.db trunc-src.json.gz
expect_eq "$(q full.db "select count(*), min(start_ns), max(end_ns) from events")" "3000|1000500|4000250" "synthetic trace"
expect_eq "$(q full.db "select s.value from events e join strings s on s.id = e.shape_id where e.start_ns = 1002500")" "[[2, 4], [4, 8]]" "shape repr"
expect_status 3 "$BIN/trace-ingest" -o trunc.db trunc.json.gz
expect_one_line_error
expect_grep 'trunc.json.gz' "$TMP/err"
expect_no_file trunc.db

# --- errors come out in document order, across the batches the parser thread works on:
# each case has two errors in different batches (512 events each); the first one wins ---
python3 - <<'PY'
import json
def doc(bad):
    parts, offs = [], []
    pos = len('{"traceEvents": [')
    for i in range(3000):
        e = json.dumps({"ph": "X", "cat": "cpu_op", "name": "op%d" % i, "pid": 1, "tid": 1,
                        "ts": i * 10, "dur": 5})
        e = bad.get(i, lambda t: t)(e)
        offs.append(pos)
        parts.append(e)
        pos += len(e) + 2
    return '{"traceEvents": [' + ", ".join(parts) + "]}", offs
neg_dur = lambda t: t.replace('"dur": 5', '"dur": -5')
bad_json = lambda t: t.replace('"dur": 5', '"dur": 5x')
for name, bad in (("order1", {1000: neg_dur, 2000: bad_json}),
                  ("order2", {1000: bad_json, 2000: neg_dur}),
                  ("order3", {700: neg_dur, 2900: bad_json})):
    text, offs = doc(bad)
    open(name + ".json", "w").write(text)
    first = min(bad)
    open(name + ".range", "w").write("%d %d\n" % (offs[first], offs[first + 1]))
PY
for c in order1 order3; do
    expect_status 3 "$BIN/trace-ingest" -o "$c.db" "$c.json"
    expect_one_line_error
    read -r from _ <"$c.range"
    expect_grep "offset=$from: bad event duration" "$TMP/err"
    expect_no_file "$c.db"
done
expect_status 3 "$BIN/trace-ingest" -o order2.db order2.json
expect_one_line_error
expect_grep 'invalid JSON' "$TMP/err"
read -r from to <order2.range
off=$(sed -n 's/.*offset=\([0-9]*\):.*/\1/p' "$TMP/err")
[ -n "$off" ] && [ "$off" -ge "$from" ] && [ "$off" -lt "$to" ] \
    || fail "invalid JSON reported at offset '$off', not in event 1000 ($from..$to)"
expect_no_file order2.db

need_traces || return 0
K=$TRACES/kineto

# --- every shared Kineto trace ingests ---
for f in "$K"/*.json "$K"/*.json.gz; do
    expect_status 0 "$BIN/trace-ingest" -q -o one.db "$f"
    n=$(q one.db "select count(*) from events")
    [ "${n:-0}" -gt 0 ] || fail "$(basename "$f"): no events"
    rm -f one.db
done

# --- per-kernel totals: run.db == direct sum over the JSON == TraceLens kernel_summary.csv.
# TraceLens splits a kernel's rows by parent op (and stream); the agreed rule is to sum its
# rows per kernel name.  Its sums are float µs: compared to 0.001 µs.
check_totals() {
    expect_status 0 "$BIN/trace-ingest" -q -o tl.db "$K/$1"
    q tl.db "select s.value, sum(e.end_ns - e.start_ns), count(*) from events e
             join strings s on s.id = e.name_id where e.kind = 7 group by s.value" -separator '	' >db.tsv
    python3 - "$K/$1" "$K/reference/$2/kernel_summary.csv" db.tsv >cmp.out 2>&1 <<'PY' || fail "$1: $(head -c 400 cmp.out)"
import collections, csv, gzip, json, sys
from decimal import Decimal, ROUND_HALF_UP
trace, ref, dbf = sys.argv[1:4]
doc = json.load(gzip.open(trace) if trace.endswith(".gz") else open(trace))
events = doc["traceEvents"] if isinstance(doc, dict) else doc
js = collections.defaultdict(lambda: [0, 0])
for e in events:
    if e.get("ph") == "X" and e.get("cat") == "kernel":
        js[e["name"]][0] += int((Decimal(str(e["dur"])) * 1000).to_integral_value(ROUND_HALF_UP))
        js[e["name"]][1] += 1
db = {}
for line in open(dbf, encoding="utf-8"):
    name, tot, cnt = line.rstrip("\n").split("\t")
    db[name] = [int(tot), int(cnt)]
if db != dict(js):
    diff = [k for k in set(db) | set(js) if db.get(k) != js.get(k)]
    sys.exit("run.db and JSON differ for %d kernel(s), e.g. %r %r %r" % (len(diff), diff[0][:80], db.get(diff[0]), js.get(diff[0])))
tl = collections.defaultdict(lambda: [0.0, 0])
for row in csv.DictReader(open(ref, encoding="utf-8")):
    tl[row["Kernel name"]][0] += float(row["Kernel duration (µs)_sum"])
    tl[row["Kernel name"]][1] += int(row["Kernel duration (µs)_count"])
bad = [k for k in set(db) | set(tl)
       if db.get(k, [0, 0])[1] != tl.get(k, [0, 0])[1] or abs(db.get(k, [0, 0])[0] / 1000 - tl.get(k, [0, 0])[0]) > 0.001]
if bad:
    sys.exit("run.db and TraceLens differ for %d kernel(s), e.g. %r" % (len(bad), bad[0][:80]))
PY
    rm -f tl.db
}
check_totals TraceLens__h100_Qwen1.5-0.5B-Chat.json.gz h100_Qwen_Qwen1.5-0.5B-Chat__1016005
check_totals TraceLens__h100_gaunernst_bert-small-uncased.json.gz h100_gaunernst_bert-small-uncased__1016001
check_totals TraceLens__h100_timesformer-base-k400.json.gz h100_facebook_timesformer-base-finetuned-k400__1016002

# --- mapping details on known files ---
expect_status 0 "$BIN/trace-ingest" -q -o bert.db "$K/TraceLens__h100_gaunernst_bert-small-uncased.json.gz"
# the GPU-side copy of the user annotation is not an activity: kernels+copies+sets only on streams
expect_eq "$(q bert.db "select count(*) from events where stream_id is not null and kind in (7, 8, 9)")" \
          "$(q bert.db "select count(*) from events where stream_id is not null and kind != 6")" "GPU rows"
expect_eq "$(q bert.db "select count(*) from events e join strings s on s.id = e.name_id where s.value = 'ProfilerStep#6' and kind = 1")" "1" "ProfilerStep kept by name"
expect_eq "$(q bert.db "select count(*) from events where kind = 11 and stack_id is null")" "0" "python frames have stacks"
expect_eq "$(q bert.db "select count(*) from events where kind = 7 and parent_id is null")" "0" "every kernel linked to its launch"
expect_eq "$(q bert.db "select value from strings s join events e on e.shape_id = s.id where e.kind = 2 and s.value like '[[1, 512]%' limit 1")" "[[1, 512], [], [], [], []]" "shape of aten::slice"
expect_status 0 "$BIN/trace-analyze" --group-by-shape -n -1 bert.db
expect_grep 'aten::slice' "$TMP/out"
expect_grep '\[\[1, 512\]' "$TMP/out"

# memory events: GPU flag from Device Type, bytes kept
expect_status 0 "$BIN/trace-ingest" -q -o tb.db "$K/kineto__tb_plugin_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz"
expect_eq "$(q tb.db "select count(*) from events where kind = 10")" "12838" "memory events"
n=$(q tb.db "select count(*) from events where kind = 2 and stack_id is not null")
[ "$n" -gt 0 ] || fail "Call stack args give stacks"

# times: ts text to ns without a double; baseTimeNanoseconds added
expect_status 0 "$BIN/trace-ingest" -q -o tri.db "$K/HTA__triton_example.json.gz"
expect_eq "$(q tri.db "select start_ns, end_ns from events where kind = 7")" \
          "$(python3 -c 'print("%d|%d" % (1727743122000000000 + 2413669097444592, 1727743122000000000 + 2413669097444592 + 1760))')" "kernel ns"

# several ranks into one run.db: a source each, ranks kept, processes apart
if [ -n "$TRACES" ]; then
    expect_status 0 "$BIN/trace-ingest" -q -o ranks.db "$TRACES/kineto/HTA__cpu_only_rank-34.pt.trace.json.gz" \
        "$TRACES/kineto/HTA__critical_path_alexnet_trace.json.gz"
    expect_eq "$(q ranks.db 'SELECT group_concat(rank) FROM (SELECT rank FROM sources ORDER BY id)')" "34,0" "ranks"
    expect_eq "$(q ranks.db 'SELECT count(DISTINCT source_id) FROM processes')" 2 "processes per source"
    expect_eq "$(q ranks.db 'SELECT sum(event_count) FROM sources')" "$(q ranks.db 'SELECT count(*) FROM events')" "events per source"
fi

# PyTorch's legacy export (no Kineto): every complete event is read, as an op
legacy="$root/../shared/reference/pytorch/examples/real_cpu_trace.json"
if [ -f "$legacy" ]; then
    expect_status 0 "$BIN/trace-ingest" -q -o legacy.db "$legacy"
    expect_eq "$(q legacy.db 'select count(*) from events where kind = 2')" \
              "$(python3 -c 'import json,sys; print(sum(e.get("ph") == "X" for e in json.load(open(sys.argv[1]))))' "$legacy")" \
              "legacy export: one op per complete event"
    expect_eq "$(q legacy.db "select count(*) from events e join strings s on s.id = e.name_id where s.value = 'aten::mm'")" 3 "legacy aten::mm"
fi

# a file whose events are all of unknown categories is bad input, not an empty run
printf '[{"name":"a","ph":"X","cat":"foo","ts":1,"dur":2,"pid":1,"tid":1},{"name":"b","ph":"X","cat":"bar","ts":3,"dur":2,"pid":1,"tid":1}]' > unknown.json
expect_status 3 "$BIN/trace-ingest" -q -o unknown.db unknown.json
expect_one_line_error
expect_grep "2 events, none of a known category (first: 'foo')" "$TMP/err"
expect_no_file unknown.db

# a NUL escaped in a name or a frame keeps the rest of the text and the later frames
printf '{"traceEvents":[{"name":"a\\u0000b","ph":"X","cat":"cpu_op","ts":1,"dur":5,"pid":1,"tid":1,"args":{"Call stack":"x.py(1): f\\u0000g;y.py(2): h"}}]}' > nul.json
expect_status 0 "$BIN/trace-ingest" -q -o nul.db nul.json
expect_eq "$(q nul.db "select s.value from events e join strings s on s.id = e.name_id")" 'a\u0000b' "NUL in a name"
expect_eq "$(q nul.db "select count(*) from stack_nodes")" 2 "frames after a NUL"

# launch fields the trace does not give are NULL, not 0 (docs/schema.md)
printf '{"traceEvents":[{"name":"k","ph":"X","cat":"kernel","ts":1,"dur":5,"pid":0,"tid":7,"args":{"device":0,"stream":7,"grid":[4,1,1]}}]}' > nogrid.json
expect_status 0 "$BIN/trace-ingest" -q -o nogrid.db nogrid.json
expect_eq "$(q nogrid.db "select grid_x, coalesce(block_x, 'null'), coalesce(registers_per_thread, 'null') from kernels")" \
          "4|null|null" "missing launch fields"

# the categories our chrome export gives kinds Kineto has none for come back as those kinds
printf '{"traceEvents":[{"name":"acc_enqueue_launch@a.c:3","ph":"X","cat":"openacc_launch","ts":1,"dur":5,"pid":1,"tid":1},{"name":"ev","ph":"X","cat":"cuda_event","ts":2,"dur":0,"pid":0,"tid":7,"args":{"device":0,"stream":7}},{"name":"k","ph":"X","cat":"kernel","ts":3,"dur":1,"pid":0,"tid":7,"args":{"device":0,"stream":7,"shared memory":16,"dynamic shared memory":32}}]}' > ours.json
expect_status 0 "$BIN/trace-ingest" -q -o ours.db ours.json
expect_eq "$(q ours.db "select group_concat(k.name) from events e join kinds k on k.id = e.kind order by e.id")" \
          "openacc_launch,cuda_event,kernel" "openacc and CUDA event categories"
expect_eq "$(q ours.db "select static_shared_bytes, dynamic_shared_bytes from kernels")" "16|32" "dynamic shared memory"

# strings are skipped 16 bytes at a time: escaped quotes and backslashes at every offset
# within the first blocks, and one string of 600 KB whose escapes straddle the reader's
# 256 KiB buffers, keep their names
python3 - <<'PY'
import json
events = []
for i in range(40):
    events.append({"name": "n" * i + '\\"q\\\\' + "m" * (i % 17), "ph": "X", "cat": "cpu_op",
                   "ts": i + 1, "dur": 1, "pid": 1, "tid": 1})
long = "".join(('a' * 37 + '\\"\\\\') for _ in range(15000))
events.append({"name": long, "ph": "X", "cat": "cpu_op", "ts": 100, "dur": 1, "pid": 1, "tid": 1})
with open("escapes.json", "w") as f:
    json.dump({"traceEvents": events}, f)
with open("escapes.names", "w") as f:
    for e in events:
        f.write(e["name"] + "\n")
PY
expect_status 0 "$BIN/trace-ingest" -q -o escapes.db escapes.json
q escapes.db "select s.value from events e join strings s on s.id = e.name_id order by e.id" > escapes.got
cmp -s escapes.got escapes.names || fail "names with escapes at every offset"
