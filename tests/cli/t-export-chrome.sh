# trace-export --chrome: Kineto's layout (categories, args, ac2g flows), valid for the
# viewers (structure, one track per stream, GPUs apart from host processes), read back
# by trace-ingest into the same tables; .gz, --min-dur, --max-size parts and --step.
need_traces || return 0
check_chrome() {   # check_chrome FILE...: every file a whole trace; prints slices and instants, flows, GPU tracks
    python3 - "$@" <<'PY'
import gzip, json, sys
cats = {"cpu_op", "user_annotation", "cuda_runtime", "cuda_driver", "cuda_sync", "kernel",
        "gpu_memcpy", "gpu_memset", "python_function", "cpu_instant_event", "ac2g",
        "openacc_data", "openacc_launch", "openacc_other", "cuda_event", "overhead"}
gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
total = flows = 0
tracks = set()
for path in sys.argv[1:]:
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        d = json.load(f)
    ev = d["traceEvents"]
    assert isinstance(ev, list) and isinstance(d["baseTimeNanoseconds"], int), path
    starts, finishes, labels, names, begins = {}, {}, {}, {}, {}
    for e in ev:
        assert e["ph"] in ("X", "i", "s", "f", "M", "b", "e"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["name"], str), e
        if e["ph"] == "M":
            if e["name"] == "process_labels":
                labels[e["pid"]] = e["args"]["labels"]
            if e["name"] == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["cat"] in cats, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "i":
            assert e["s"] == "t", e
        if e["ph"] == "s": starts[e["id"]] = e
        if e["ph"] == "f":
            assert e.get("bp") == "e", e
            finishes[e["id"]] = e
        # an event that does not nest on its track: an async slice, its end right after it
        if e["ph"] == "b":
            assert (e["cat"], e["id"]) not in begins, ("async id twice", e)
            begins[(e["cat"], e["id"])] = e
        if e["ph"] == "e":
            b = begins.pop((e["cat"], e["id"]), None)
            assert b and all(b[k] == e[k] for k in ("name", "pid", "tid")) and e["ts"] >= b["ts"], ("async end", e)
    assert not begins, ("async slices without an end", list(begins.values())[:3])
    assert set(starts) == set(finishes), "unmatched flows"
    # a stream is named only in a file that has its activities: no empty track
    used = {(e["pid"], e["tid"]) for e in ev if e["ph"] != "M"}
    for k, v in names.items():
        assert not v.startswith("stream ") or k in used, ("a stream without events", path, k, v)
    # the complete events of a track nest (Perfetto drops one that ends after the one it starts in)
    by_track = {}
    for e in ev:
        if e["ph"] == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append((round(e["ts"] * 1000), -round(e["dur"] * 1000), e["name"]))
    for track, v in by_track.items():
        v.sort()
        open_ends = []
        for ts, mdur, name in v:
            while open_ends and open_ends[-1][0] <= ts:
                open_ends.pop()
            assert not open_ends or ts - mdur <= open_ends[-1][0], ("not nested", path, track, name, open_ends[-1][1])
            if mdur:
                open_ends.append((ts - mdur, name))
    # a flow starts inside its launching call's slice, in the same file (Perfetto binds it there)
    spans = {}
    for e in ev:
        if e["ph"] == "X":
            spans.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for e in starts.values():
        assert any(a <= e["ts"] <= b for a, b in spans.get((e["pid"], e["tid"]), ())), ("flow start", path, e)
    for e in ev:
        if e["ph"] == "X" and e["cat"] in gpu_cats:
            # on the track of its device and stream, apart from every host process
            assert labels.get(e["pid"]) == "GPU %d" % e["args"]["device"], ("GPU track", e)
            assert e["tid"] == e["args"]["stream"], e
            assert names.get((e["pid"], e["tid"])) == "stream %d" % e["tid"], ("stream name", e)
            tracks.add((e["pid"], e["tid"]))
        if e["ph"] == "X" and e["cat"] == "cpu_op":
            assert labels.get(e["pid"]) == "CPU", ("host track", e)
            assert isinstance(e["args"]["External id"], int), e
        if e["ph"] == "X" and e["cat"] == "kernel":
            a = e["args"]
            assert len(a["grid"]) == 3 and len(a["block"]) == 3 and "registers per thread" in a, e
    total += sum(e["ph"] in ("X", "i") for e in ev)
    flows += len(starts)
print(total, flows, len(tracks))
PY
}
# the key_averages table and the totals per kind of a run.db
tables() {
    "$BIN/trace-analyze" -n -1 --format csv --sort self_cpu_time_total "$1"
    q "$1" "SELECT k.name, count(*), sum(e.end_ns - e.start_ns), sum(e.cpu_self_ns), sum(e.gpu_self_ns),
            sum(e.bytes) FROM events e JOIN kinds k ON k.id = e.kind GROUP BY 1 ORDER BY 1"
}

for trace in "$TRACES"/nvprof/*; do
    name=$(basename "$trace")
    db="$TMP/${name%.*}.db"
    "$BIN/trace-ingest" -q -o "$db" "$trace" || { fail "ingest $name"; continue; }
    "$BIN/trace-export" --chrome -o "$TMP/t.json" "$db" || { fail "$name: exit $?"; continue; }
    out=$(check_chrome "$TMP/t.json") || { fail "$name: bad chrome trace"; continue; }
    # every API call -> activity link is drawn
    links=$(q "$db" "SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind JOIN events p ON p.id = e.parent_id WHERE k.on_gpu")
    expect_eq "$(echo "$out" | cut -d' ' -f2)" "$links" "$name: flow arrows"
    # Kineto's "shared memory" is static + dynamic (HTA and TraceLens read it so)
    smem=$(q "$db" "SELECT coalesce(sum(coalesce(static_shared_bytes, 0) + coalesce(dynamic_shared_bytes, 0)), 0) FROM kernels
                    WHERE static_shared_bytes IS NOT NULL OR dynamic_shared_bytes IS NOT NULL")
    expect_eq "$(python3 -c 'import json, sys
print(sum(e["args"].get("shared memory", 0) for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("cat") == "kernel"))' "$TMP/t.json")" \
        "$smem" "$name: shared memory"
done
# several streams -> several tracks
db="$TMP/kSched__RTX2080Ti_sp_15_mm_1_timeline.db"
streams=$(q "$db" "SELECT count(DISTINCT e.stream_id) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.on_gpu AND e.stream_id IS NOT NULL")
"$BIN/trace-export" --chrome -o "$TMP/t.json" "$db"
expect_eq "$(check_chrome "$TMP/t.json" | cut -d' ' -f3)" "$streams" "one track per stream"
# selection: a time window and a thread keep flows consistent
"$BIN/trace-export" --chrome --time-range 0:200000000 -o "$TMP/w.json" "$db" && check_chrome "$TMP/w.json" >/dev/null \
    || fail "--time-range chrome trace"

# Round trip: our export is a Kineto trace that ingests into the same tables.
qwen="$TRACES/kineto/TraceLens__h100_Qwen1.5-0.5B-Chat.json.gz"
for src in "$root/sample-traces/lm-step.nvvp" "$qwen"; do
    name=$(basename "$src")
    "$BIN/trace-ingest" -q -o "$TMP/a.db" "$src" || { fail "ingest $name"; continue; }
    for out in rt.json rt.json.gz; do
        rm -f "$TMP/b.db"
        "$BIN/trace-export" --chrome -o "$TMP/$out" "$TMP/a.db" 2>"$TMP/err" || { fail "$name: export $out"; continue; }
        [ -s "$TMP/err" ] && fail "$name: unexpected stderr: $(cat "$TMP/err")"
        check_chrome "$TMP/$out" >/dev/null || fail "$name: $out is not a valid trace"
        "$BIN/trace-ingest" -q -o "$TMP/b.db" "$TMP/$out" || { fail "$name: $out does not ingest"; continue; }
        q "$TMP/b.db" "SELECT format FROM sources" | grep -qx kineto || fail "$name: $out not read as Kineto"
        tables "$TMP/a.db" >"$TMP/a.txt"
        tables "$TMP/b.db" >"$TMP/b.txt"
        cmp -s "$TMP/a.txt" "$TMP/b.txt" || fail "$name: $out: tables differ after the round trip: $(diff "$TMP/a.txt" "$TMP/b.txt" | head -5)"
        # the same times, threads and shapes, not only the same sums
        for d in a b; do
            q "$TMP/$d.db" "SELECT e.kind, e.start_ns, e.end_ns, t.tid, p.pid, sh.value, e.seq FROM events e
                LEFT JOIN threads t ON t.id = e.thread_id LEFT JOIN processes p ON p.id = t.process_id
                LEFT JOIN strings sh ON sh.id = e.shape_id WHERE e.kind IN (1, 2, 4, 5, 11)
                ORDER BY 2, 3, 1, 4" >"$TMP/$d.ev"
        done
        cmp -s "$TMP/a.ev" "$TMP/b.ev" || fail "$name: $out: host events differ after the round trip"
        for d in a b; do
            q "$TMP/$d.db" "SELECT e.start_ns, d.device, s.stream, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y,
                k.block_z, k.registers_per_thread, k.static_shared_bytes FROM kernels k JOIN events e ON e.id = k.event_id
                JOIN streams s ON s.id = e.stream_id JOIN devices d ON d.id = s.device_id ORDER BY 1, 4, 7" >"$TMP/$d.kn"
        done
        cmp -s "$TMP/a.kn" "$TMP/b.kn" || fail "$name: $out: kernel launches differ after the round trip"
    done
    case $out in *.gz) [ "$(head -c 2 "$TMP/$out" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "$name: .gz output is not gzip" ;; esac
done

# Two kernels that overlap on one stream (a CUDA graph's): the shorter is an async slice
# without an arrow (a viewer would bind it to the longer), and both read back.
cat >"$TMP/ov.json" <<'EOF'
{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"op","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":1,"cbid":211}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":4,"dur":2,"args":{"correlation":2,"cbid":211}},
{"ph":"X","cat":"kernel","name":"long","pid":0,"tid":7,"ts":10,"dur":50,"args":{"device":0,"stream":7,"correlation":1,"grid":[1,1,1],"block":[32,1,1],"registers per thread":16}},
{"ph":"X","cat":"kernel","name":"short","pid":0,"tid":7,"ts":55,"dur":10,"args":{"device":0,"stream":7,"correlation":2,"grid":[1,1,1],"block":[32,1,1],"registers per thread":16}}]}
EOF
"$BIN/trace-ingest" -q -o "$TMP/ov.db" "$TMP/ov.json" && "$BIN/trace-export" --chrome -o "$TMP/ov.out.json" "$TMP/ov.db" \
    && check_chrome "$TMP/ov.out.json" >/dev/null || fail "overlapping kernels: export"
expect_eq "$(python3 -c 'import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(" ".join(sorted("%s:%s" % (e["name"], e["ph"]) for e in ev if e.get("cat") in ("kernel", "ac2g"))))' "$TMP/ov.out.json")" \
    "ac2g:f ac2g:s long:X short:b short:e" "overlapping kernels: the shorter apart, one arrow"
"$BIN/trace-ingest" -q -o "$TMP/ov2.db" "$TMP/ov.out.json" || fail "overlapping kernels: read back"
expect_eq "$(q "$TMP/ov2.db" "SELECT group_concat(s.value || ':' || (e.end_ns - e.start_ns), ' ') FROM events e
    JOIN strings s ON s.id = e.name_id WHERE e.kind = 7")" "long:50000 short:10000" "overlapping kernels read back"

# The Qwen trace has a host process with pid 0 beside GPU 0: they get different pids.
"$BIN/trace-ingest" -q -o "$TMP/qwen.db" "$qwen"
"$BIN/trace-export" --chrome -o "$TMP/q.json" "$TMP/qwen.db"
python3 - "$TMP/q.json" <<'PY' || fail "a host process and a GPU share a pid"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
labels = {}
for e in ev:
    if e["ph"] == "M" and e["name"] == "process_labels":
        labels.setdefault(e["pid"], set()).add(e["args"]["labels"])
assert all(len(v) == 1 for v in labels.values()), labels
host = {e["pid"] for e in ev if e["ph"] == "X" and e["cat"] in ("cpu_op", "python_function")}
gpu = {e["pid"] for e in ev if e["ph"] == "X" and e["cat"] == "kernel"}
assert 0 in host and gpu and not host & gpu, (host, gpu)
# Kineto's args, read as PyTorch writes them
ops = [e for e in ev if e.get("cat") == "cpu_op"]
assert all(isinstance(e["args"]["Input Dims"], list) for e in ops)
assert any(e["args"].get("Call stack") for e in ops)
py = [e for e in ev if e.get("cat") == "python_function"]
assert any(e["args"]["Python parent id"] is not None for e in py)
mem = [e for e in ev if e["name"] == "[memory]"]
assert mem and all(e["ph"] == "i" and e["cat"] == "cpu_instant_event" and "Bytes" in e["args"] for e in mem)
PY

# --min-dur: no slice shorter than the limit, fewer events, still a valid trace
"$BIN/trace-export" --chrome --min-dur 10us -o "$TMP/m.json" "$TMP/qwen.db" || fail "--min-dur"
python3 - "$TMP/m.json" "$TMP/q.json" <<'PY' || fail "--min-dur left short slices or dropped long ones"
import json, sys
m = json.load(open(sys.argv[1]))["traceEvents"]
a = json.load(open(sys.argv[2]))["traceEvents"]
assert all(e["dur"] >= 10 for e in m if e["ph"] == "X")
assert sum(e["ph"] == "X" for e in m) == sum(e["ph"] == "X" and e["dur"] >= 10 for e in a)
PY
check_chrome "$TMP/m.json" >/dev/null || fail "--min-dur output is not a valid trace"
expect_status 2 "$BIN/trace-export" --chrome --min-dur 10parsecs -o "$TMP/x.json" "$TMP/qwen.db"
expect_status 2 "$BIN/trace-export" --stacks --min-dur 1us "$TMP/qwen.db"

# --max-size: numbered parts, each a whole trace with the metadata, together the whole trace
"$BIN/trace-export" --chrome --max-size 1MB -o "$TMP/p.json" "$TMP/qwen.db" || fail "--max-size"
n=$(ls "$TMP"/p.*.json | wc -l)
[ "$n" -ge 5 ] || fail "--max-size 1MB gave $n part(s)"
[ -e "$TMP/p.json" ] && fail "--max-size also wrote p.json"
for f in "$TMP"/p.*.json; do
    [ "$(stat -c %s "$f")" -le 1000000 ] || fail "$f is over 1MB"
done
whole=$(check_chrome "$TMP/q.json" | cut -d' ' -f1)
parts=$(check_chrome "$TMP"/p.*.json | cut -d' ' -f1)
expect_eq "$parts" "$whole" "events over all parts"
python3 - "$TMP"/p.*.json <<'PY' || fail "a part lacks the metadata"
import json, sys
for p in sys.argv[1:]:
    ev = json.load(open(p))["traceEvents"]
    assert sum(e["ph"] == "M" and e["name"] == "process_name" for e in ev) >= 2, p
PY
"$BIN/trace-export" --chrome --max-size 1MB -o "$TMP/g.json.gz" "$TMP/qwen.db" && [ -e "$TMP/g.1.json.gz" ] \
    && check_chrome "$TMP"/g.*.json.gz >/dev/null || fail "--max-size with .gz"
expect_status 2 "$BIN/trace-export" --chrome --max-size 1MB "$TMP/qwen.db"
expect_status 2 "$BIN/trace-export" --chrome --max-size 10 -o "$TMP/x.json" "$TMP/qwen.db"

# --step: the window of ProfilerStep#6; an unknown step names the ones there are
"$BIN/trace-export" --chrome --step 6 -o "$TMP/s.json" "$TMP/qwen.db" && check_chrome "$TMP/s.json" >/dev/null \
    || fail "--step 6"
expect_status 3 "$BIN/trace-export" --chrome --step 7 -o "$TMP/x.json" "$TMP/qwen.db"
expect_grep 'steps: 6' "$TMP/err"
expect_status 2 "$BIN/trace-export" --chrome --step 6 --time-range 0:1 "$TMP/qwen.db"

# In a browser (when Chromium is installed): the JSON parses with the browser's own
# JSON.parse, as chrome://tracing and the Perfetto UI read it, and has what their importers need.
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -n "$CHROMIUM" ] && command -v timeout >/dev/null; then
    cat >"$TMP/load.html" <<'HTML'
<!doctype html><html><body><pre id="r">pending</pre><script>
const r = document.getElementById("r");
fetch("q.json").then(x => x.text()).then(t => {
  const d = JSON.parse(t), ev = d.traceEvents;
  if (!Array.isArray(ev)) throw "traceEvents is not an array";
  let n = 0;
  for (const e of ev) {
    if (!["X", "i", "s", "f", "M", "b", "e"].includes(e.ph)) throw "ph " + e.ph;
    if ((e.ph === "b" || e.ph === "e") && !Number.isInteger(e.id)) throw "id " + JSON.stringify(e);
    if (!Number.isInteger(e.pid) || !Number.isInteger(e.tid)) throw "pid/tid " + JSON.stringify(e);
    if (e.ph !== "M" && !(typeof e.ts === "number" && isFinite(e.ts))) throw "ts " + JSON.stringify(e);
    if (e.ph === "X" && !(typeof e.dur === "number" && e.dur >= 0)) throw "dur " + JSON.stringify(e);
    n++;
  }
  r.textContent = "loaded " + n;
}).catch(e => { r.textContent = "error " + e; });
</script></body></html>
HTML
    prof=$(mktemp -d "$TMP/prof.XXXXXX")
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --allow-file-access-from-files \
        --disable-background-networking --disable-component-update --disable-sync --virtual-time-budget=20000 \
        --user-data-dir="$prof" --dump-dom "file://$TMP/load.html" >"$TMP/dom.html" 2>"$TMP/chromium.log"
    n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["traceEvents"]))' "$TMP/q.json")
    grep -q "loaded $n<" "$TMP/dom.html" || fail "the browser did not load the trace: $(grep -o 'id="r">[^<]*' "$TMP/dom.html")"
else
    skip "chromium not installed: the browser load is not checked"
fi

# --include decides through the stacks (the frame-tree scan), then the same writer
"$BIN/trace-export" --chrome --include '^aten::linear$' -o "$TMP/i.json" "$TMP/qwen.db" || fail "--include"
n=$(python3 -c 'import json,sys; ev=json.load(open(sys.argv[1]))["traceEvents"]; x=[e for e in ev if e["ph"]!="M"]; assert all(e["name"]=="aten::linear" for e in x), x[:1]; print(len(x))' "$TMP/i.json") \
    || fail "--include wrote other events"
expect_eq "$n" "$(q "$TMP/qwen.db" "SELECT count(*) FROM events e JOIN strings s ON s.id = e.name_id WHERE s.value = 'aten::linear'")" "--include events"
# overhead rows are written (viewers show them) but not read back, and ingest says how many
db="$TMP/profiling-lm__net-17ed9e2.db"
n=$(q "$db" "SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.name = 'overhead'")
[ "$n" -gt 0 ] || fail "profiling-lm has no overhead rows"
expect_status 0 "$BIN/trace-export" --chrome -o "$TMP/oh.json" "$db"
expect_status 0 "$BIN/trace-ingest" -o "$TMP/oh.db" "$TMP/oh.json"
expect_grep "$n profiler overhead slice(s) (cat overhead) left out" "$TMP/err"
