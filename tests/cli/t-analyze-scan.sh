# trace-analyze's scan (the path of every filter, --stats and --group-by-stack)
# against answers made without it: the events table read by Python (expect.py),
# the tables of the ingest-time aggregates, and events placed by hand.
# Times of --time-range count from the earliest start of any event (docs/reports.md,
# analyze/summary.c first_start): the scan guesses that start from the aggregates'
# first events and the first event by id, so several cases below make the guess wrong.
root=$(cd "$GOLDEN_DIR/../../.." && pwd)

# expect.py DB CASES: for each line "NAME<TAB>RUN.DB<TAB>OPTIONS" of CASES, the table
# trace-analyze must print for OPTIONS (--kind, --include, --exclude, --time-range A:B
# in ns, --thread, --stream, --group-by-stack N, --stats), made from DB's tables of
# events, names, kinds, threads and streams alone (RUN.DB holds the same events), against
# NAME.json (--format json -n -1: every row's calls, times, CPU total %, stack and
# statistics) and NAME.txt (text --units us: the host time the spans cover, to the ns).
# One line per case: "ok NAME" or what differs.
cat >expect.py <<'EOF'
import json, re, shlex, sqlite3, sys
from math import sqrt
db = sqlite3.connect(sys.argv[1])
kinds = {k: (name, on_gpu) for k, name, on_gpu in db.execute("SELECT id, name, on_gpu FROM kinds")}
strings = dict(db.execute("SELECT id, value FROM strings"))
tids = dict(db.execute("SELECT id, tid FROM threads"))
streams = dict(db.execute("SELECT id, stream FROM streams"))
ev = {}
for r in db.execute("SELECT id, kind, name_id, start_ns, end_ns, thread_id, parent_id, flags, cpu_total_ns,"
                    " cpu_self_ns, gpu_total_ns, gpu_self_ns, stream_id FROM events"):
    ev[r[0]] = r
t0 = min((r[3] for r in ev.values()), default=0)   # the first event, whatever its kind
API = {"runtime", "driver"}
GROUPS = {"ops": {"op"}, "ranges": {"range"}, "api": API, "kernels": {"kernel"}, "copies": {"memcpy"},
          "sets": {"memset"}, "gpu": {"kernel", "memcpy", "memset", "cuda_event"}}
paths = {}
def path(i):   # names of the ancestors, outermost first (host events, the tree's walk)
    todo = []
    while i not in paths:
        p = ev[i][6]
        if p is None or p not in ev or ev[p][7] & 1 or kinds.get(ev[p][1], ("", 1))[1]:
            paths[i] = ()
            break
        todo.append(i)
        i = p
    for j in reversed(todo):
        p = ev[j][6]
        paths[j] = paths[p] + (strings[ev[p][2]],)
    return paths[i if not todo else todo[0]]
def stack_of(r, gpu):
    if r[7] & 1:
        return ()
    if not gpu:
        return path(r[0])
    p = r[6]
    if p is None or p not in ev or ev[p][7] & 1 or kinds.get(ev[p][1], ("",))[0] not in API:
        return ()
    return path(p) + (strings[ev[p][2]],)
# the events a table can count (no merged redispatch, no memory event a host event holds,
# no kind the kinds table lacks), with what a case tests, made once
cand = []
for r in ev.values():
    if r[1] not in kinds or r[7] & 32:
        continue
    kname, gpu = kinds[r[1]]
    if kname == "memory" and r[6] is not None:
        continue
    name = strings[r[2]]
    # its thread (--thread, the covered host time): its own, else its launching call's
    tid = tids.get(r[5]) if r[5] is not None else None
    if r[5] is None and r[6] in ev and ev[r[6]][5] is not None:
        tid = tids.get(ev[r[6]][5])
    stream = streams.get(r[12]) if gpu and r[12] is not None else None
    cand.append((kname, gpu, name, r[3] - t0, r, tid, stack_of(r, gpu), stream))
def expect(opts):
    a = shlex.split(opts)
    kmask, inc, exc, tr, nstack, stats, thread, stream = None, [], [], None, 0, False, None, None
    i = 0
    while i < len(a):
        o = a[i]
        if o == "--stats":
            stats = True; i += 1; continue
        v = a[i + 1]; i += 2
        if o == "--kind":
            kmask = set()
            for k in v.split(","):
                kmask |= GROUPS.get(k, {k})
        elif o == "--include": inc.append(re.compile(v))
        elif o == "--exclude": exc.append(re.compile(v))
        elif o == "--time-range":
            s, e = v.split(":")
            tr = (int(s) if s else 0, int(e) if e else 1 << 63)
        elif o == "--group-by-stack": nstack = int(v)
        elif o == "--thread": thread = int(v)
        elif o == "--stream": stream = int(v)
        else: raise SystemExit("expect.py: option " + o)
    filtered = kmask is not None or inc or exc or tr is not None or thread is not None or stream is not None
    rows, spans, events, host_kinds = {}, {}, 0, kmask is None or any(not g for n, g in kinds.values() if n in kmask)
    name_ok = {}
    def add(key, r, gpu_as_host=False):
        g = rows.setdefault(key, [0, 0, 0, 0, 0, []])
        g[0] += 1
        if gpu_as_host:
            g[3] += r[11]; g[4] += r[11]
            return
        g[1] += r[9]; g[2] += r[8]; g[3] += r[11]; g[4] += r[10]
        g[5].append(r[4] - r[3])
    for kname, gpu, name, rel, r, tid, stack, sm in cand:
        if kmask is not None and kname not in kmask: continue
        if thread is not None and tid != thread: continue
        if stream is not None and sm != stream: continue
        if tr is not None and not (tr[0] <= rel < tr[1]): continue
        ok = name_ok.get(name)
        if ok is None:
            ok = name_ok[name] = (not inc or any(x.search(name) for x in inc)) and not any(x.search(name) for x in exc)
        if not ok: continue
        events += 1
        gname = "ProfilerStep*" if name.startswith("ProfilerStep#") and len(name) > 13 else name
        st = tuple(reversed(stack[-nstack:])) if nstack else ()
        add((gname, "gpu" if gpu else "cpu", st), r)
        if gpu and r[6] is None and host_kinds:
            add(("[no launching call]", "cpu", ()), r, True)
        if not gpu and not r[7] & 1:
            spans.setdefault(tid, []).append((r[3], r[4]))
    covered = 0
    for v in spans.values():
        v.sort()
        lo, hi = v[0]
        for s, e in v[1:]:
            if s <= hi:
                hi = max(hi, e)
            else:
                covered += hi - lo; lo, hi = s, e
        covered += hi - lo
    self_cpu = sum(g[1] for g in rows.values())
    base = max(covered, self_cpu) if filtered else self_cpu
    out = {}
    for (n, d, st), g in rows.items():
        pct = min(100.0, g[2] * 100.0 / base) if base else 0.0
        row = [g[0], g[1], g[2], g[3], g[4], "%.15g" % pct]
        if stats:
            du = sorted(g[5])
            if du:
                m = len(du) // 2
                med = float(du[m]) if len(du) % 2 else (float(du[m - 1]) + float(du[m])) / 2.0
                mean = 0.0
                for x in du: mean += float(x)
                mean /= len(du)
                var = 0.0
                for x in du: var += (float(x) - mean) * (float(x) - mean)
                sd = sqrt(var / (len(du) - 1)) if len(du) > 1 else 0.0
                row += [du[0], du[-1], "%.15g" % med, "%.15g" % sd]
            else:
                row += [0, 0, "0", "0"]
        out[(n, d, st)] = row
    # the text says which host time the shares are of when its filter kept events
    return out, events, (base if filtered and events else None)
def got(name, stats):
    text = open(name + ".json").read()
    # the real columns as printed (%.15g), not as Python reads them back
    pct = re.findall(r'"cpu_total_pct":([^,]*),', text)
    med = re.findall(r'"median_ns":([^,]*),', text)
    sd = re.findall(r'"stddev_ns":([^,}]*)[,}]', text)
    d = json.loads(text)
    out = {}
    for i, r in enumerate(d["rows"]):
        row = [r["calls"], r["self_cpu_ns"], r["cpu_total_ns"], r.get("self_gpu_ns", 0), r.get("gpu_total_ns", 0), pct[i]]
        if stats:
            row += [r["min_ns"], r["max_ns"], med[i], sd[i]]
        out[(r["name"], r["device"], tuple(r.get("stack", ())))] = row
    cov = None
    m = re.search(r"CPU total % of the ([0-9.]+)us their spans cover", open(name + ".txt").read())
    if m:
        cov = round(float(m.group(1)) * 1000)
    return out, d["events"], cov
bad = 0
for line in open(sys.argv[2]):
    name, _, opts = line.rstrip("\n").split("\t")
    want, wn, wcov = expect(opts)
    have, hn, hcov = got(name, "--stats" in opts)
    why = []
    if wn != hn: why.append("events %d, expected %d" % (hn, wn))
    if wcov != hcov: why.append("covered host time %s, expected %s" % (hcov, wcov))
    for k in sorted(set(want) | set(have), key=repr):
        if want.get(k) != have.get(k):
            why.append("row %r: %s, expected %s" % (k, have.get(k), want.get(k)))
    print("ok " + name if not why else "%s [%s]: %s" % (name, opts, "; ".join(why[:4])))
EOF

# run_cases DB: runs every case of $TMP/cases (json and text), then expect.py on DB's events
run_cases() {
    while IFS="$(printf '\t')" read -r name db opts; do
        # shellcheck disable=SC2086
        "$BIN/trace-analyze" $opts --format json -n -1 "$db" >"$name.json" 2>/dev/null \
            || fail "$name: trace-analyze $opts $db exited $?"
        case $opts in
            *--include*|*--exclude*|*--kind*|*--thread*|*--stream*|*--time-range*)
                # shellcheck disable=SC2086
                "$BIN/trace-analyze" $opts --units us -n -1 "$db" >"$name.txt" 2>/dev/null ;;
            *) : >"$name.txt" ;;   # not filtered: no covered host time to read
        esac
    done <cases
    python3 expect.py "$1" cases >verdicts || fail "expect.py failed"
    [ "$(grep -c . verdicts)" = "$(grep -c . cases)" ] || fail "expect.py judged $(grep -c . verdicts) of $(grep -c . cases) cases"
    while read -r v; do
        case $v in ok\ *) ;; *) fail "$v" ;; esac
    done <verdicts
}

# ---- --time-range on events placed by hand ----
# t0 is the mark "first" at 1000 ns, the last event by id: the scan's guess of the
# first start (event id 1, no aggregates) is 1000 ns too late.  Relative starts:
#   first 0 (mark) | long 500 (range, to 8000) | late 1000 | mid 2000, 5000 | tail 7000
# (mid and tail nested in long; late on another thread)
"$BIN/trace-ingest" -q -o h.db "$root/sample-traces/lm-step.nvvp" || fail "ingest sample"
q h.db "DROP TABLE aggregates; DELETE FROM events; DELETE FROM threads;
INSERT INTO threads(id, process_id, tid) VALUES (1, 1, 11), (2, 1, 12);
INSERT INTO strings(id, value) VALUES (90001, 'late'), (90002, 'long'), (90003, 'mid'), (90004, 'tail'),
    (90005, 'first');
INSERT INTO events(id, kind, name_id, start_ns, end_ns, thread_id, parent_id, depth, flags, cpu_total_ns,
    cpu_self_ns, gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self)
VALUES (1, 2, 90001, 2000, 2100, 2, NULL, 0, 0, 100, 100, 0, 0, 0, 0, 0, 0),
       (2, 1, 90002, 1500, 9000, 1, NULL, 0, 0, 7500, 6850, 0, 0, 0, 0, 0, 0),
       (3, 2, 90003, 3000, 3050, 1, 2, 1, 0, 50, 50, 0, 0, 0, 0, 0, 0),
       (4, 2, 90003, 6000, 6100, 1, 2, 1, 0, 100, 100, 0, 0, 0, 0, 0, 0),
       (5, 2, 90004, 8000, 8500, 1, 2, 1, 0, 500, 500, 0, 0, 0, 0, 0, 0),
       (6, 3, 90005, 1000, 1000, 1, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);" || fail "hand-made run.db"
names() {   # OPTIONS...: the rows of h.db's table as name:calls, sorted (names without commas)
    "$BIN/trace-analyze" "$@" --format csv -n -1 h.db 2>/dev/null | awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == "calls") c = i; next }
        { print $1 ":" $c }' | sort | tr '\n' ' ' | sed 's/ $//'
}
# the range starts at the first event (an empty or zero start), before the first op
expect_eq "$(names --time-range :1000)" "first:1 long:1" "open start"
expect_eq "$(names --time-range 0:1us)" "first:1 long:1" "start 0"
expect_eq "$(names --kind ops,ranges --time-range 0:1001)" "late:1 long:1" "start before the first selected event"
expect_eq "$(names --kind ops --time-range :1001)" "late:1" "t0 is the first event of any kind"
# it cannot start before the trace's first event: times are after it, never negative
expect_status 2 "$BIN/trace-analyze" --time-range -1: h.db
expect_one_line_error
# exactly at an event's start: [START, END) holds it at START, not at END
expect_eq "$(names --time-range 500:)" "late:1 long:1 mid:2 tail:1" "start at an event's start"
expect_eq "$(names --time-range 0.5us:)" "late:1 long:1 mid:2 tail:1" "start at an event's start, us"
expect_eq "$(names --time-range 501:)" "late:1 mid:2 tail:1" "start one ns after an event's start"
expect_eq "$(names --time-range 0:500)" "first:1" "end at an event's start"
expect_eq "$(names --time-range 1000:2001 --kind ops)" "late:1 mid:1" "end one ns after an event's start"
# in the middle of a long event: it started before the range, so it is not in it
expect_eq "$(names --time-range 600:)" "late:1 mid:2 tail:1" "start inside a long event"
expect_eq "$(names --time-range 600:5000)" "late:1 mid:1" "inside a long event, to a start"
# nothing starts in the range (though "long" and "tail" run through it)
for r in 7001: 7001:1s 2001:4999 1s:2s; do
    expect_status 0 "$BIN/trace-analyze" --time-range $r h.db
    expect_eq "$(wc -c <"$TMP/out" | tr -d ' ')" 0 "--time-range $r: a table of nothing"
    expect_grep "no events selected" "$TMP/err"
    expect_eq "$(names --time-range $r)" "" "--time-range $r selects nothing"
done
expect_eq "$(names --kind marks --time-range 1:)" "" "the only mark is at 0"
# the same cases through expect.py: sums and the host time they cover too
printf 'h%s\th.db\t%s\n' 1 "--time-range :1000" 2 "--kind ops,ranges --time-range 0:1001" \
    3 "--time-range 500:" 4 "--time-range 501:" 5 "--time-range 600:5000" 6 "--time-range 7001:" \
    7 "--group-by-stack 2 --time-range 600:" 8 "--stats --time-range 500:" >cases
run_cases h.db

# ---- a generated run of 120,000 events (gen-nvprof: ~0.64 s of a training loop) ----
"$BIN/gen-nvprof" -n 120000 -o g.nvvp && "$BIN/trace-ingest" -q -o g.db g.nvvp || fail "generate and ingest"
rm -f g.nvvp
# n.db: no aggregates (a run.db of an earlier build): the guess of the first start is
# event id 1's, 6.5 us after the first event (the profiler's start mark)
cp g.db n.db && q n.db "DROP TABLE aggregates"
expect_eq "$(q n.db "SELECT (SELECT start_ns FROM events WHERE id = 1) > min(start_ns)
                     AND (SELECT id FROM events ORDER BY start_ns LIMIT 1) > 1 FROM events")" 1 \
    "the first event by id is not the first event"
t0=$(q g.db "SELECT min(start_ns) FROM events")
rel() { q g.db "SELECT $1 - $t0 FROM events WHERE $2"; }   # EXPR WHERE: a relative time
k1=$(rel start_ns "kind = 7 ORDER BY start_ns LIMIT 1 OFFSET 20000")      # a kernel's start
k2=$(rel start_ns "kind = 7 ORDER BY start_ns LIMIT 1 OFFSET 20500")
l1=$(rel "start_ns + (end_ns - start_ns) / 2" "kind = 1 ORDER BY start_ns LIMIT 1 OFFSET 2000")   # inside train_step
l2=$(rel "end_ns" "kind = 1 ORDER BY start_ns LIMIT 1 OFFSET 2003")
# a gap: no event starts in [gap, gap_end), though train_step and its ops run through it
gap=$(q g.db "SELECT s + 1 - $t0, n - $t0 FROM (SELECT start_ns AS s, lead(start_ns) OVER (ORDER BY start_ns) AS n
              FROM events) WHERE n - s > 1000 ORDER BY s LIMIT 1 OFFSET 100" | tr '|' ':')
last=$(rel "max(start_ns) + 1" 1)
[ -n "$k1" ] && [ -n "$k2" ] && [ -n "$l1" ] && [ -n "$l2" ] && [ -n "$gap" ] || fail "times to test"
expect_eq "$(q g.db "SELECT count(*) FROM events WHERE start_ns - $t0 >= ${gap%:*} AND start_ns - $t0 < ${gap#*:}")" 0 \
    "the gap has no start"
{
    printf '%s\tg.db\t%s\n' \
        t1 "--time-range :2000000" \
        t2 "--time-range $k1:$k2" \
        t3 "--kind kernel --time-range $k1:$k2" \
        t4 "--time-range $((k1 + 1)):$((k2 + 1))" \
        t5 "--time-range $l1:$l2" \
        t6 "--time-range $gap" \
        t7 "--time-range $last:" \
        i1 "--include ^aten:: --exclude add" \
        i2 "--exclude elementwise|sgemm --kind kernel,memcpy,memset" \
        i3 "--include Backward0\$ --include ^cuda --time-range $k1:$l2" \
        i4 "--include ^nothing-has-this-name\$" \
        i5 "--thread 1001 --time-range $l1:" \
        i6 "--stream 13 --exclude sgemm" \
        s1 "--group-by-stack 3" \
        s2 "--group-by-stack 2 --include ^aten:: --time-range $l1:" \
        s3 "--group-by-stack 4 --kind kernel --exclude sgemm" \
        s4 "--group-by-stack 50 --time-range $k1:$k2" \
        x1 "--stats" \
        x2 "--stats --kind kernel --time-range $k1:$k2" \
        x3 "--stats --group-by-stack 2 --exclude ^cu"
} >cases
# the time cases again without aggregates: the scan starts over from the first event it meets
awk -F '\t' -v OFS='\t' '$1 ~ /^(t[2456]|x2)$/ { print "n" $1, "n.db", $3 }' cases >cases.n && cat cases.n >>cases
run_cases g.db

# ---- the scan and the aggregates: byte for byte the same tables ----
# TR_AGGREGATES_MIN=1: the aggregates at any size (the default waits for 200,000
# events); TR_NO_AGGREGATES=1: the scan all the same
agg() { TR_AGGREGATES_MIN=1 "$BIN/trace-analyze" "$@"; }
scan() { TR_AGGREGATES_MIN=1 TR_NO_AGGREGATES=1 "$BIN/trace-analyze" "$@"; }
for args in "" "--format csv -n -1" "--format json -n -1 --group-by-shape" "--format markdown --sort count" \
            "--sort cpu_time_total -n 7" "--sort none --units ms -n -1" "--group-by-shape --sort self_cpu"; do
    # shellcheck disable=SC2086
    agg $args g.db >agg.out 2>agg.err || fail "aggregates: $args"
    # shellcheck disable=SC2086
    scan $args g.db >scan.out 2>scan.err || fail "scan: $args"
    [ -s agg.out ] || fail "aggregates: no table with '$args'"
    cmp -s agg.out scan.out && cmp -s agg.err scan.err || {
        fail "aggregates and scan differ: '$args'"
        diff agg.out scan.out | head -6 >&2
    }
done
# each side reads what it says: one aggregate row changed changes only the first
cp g.db x.db && q x.db "UPDATE aggregates SET events = events + 1 WHERE on_gpu = 0 AND rowid =
                        (SELECT min(rowid) FROM aggregates WHERE on_gpu = 0)"
agg --format csv -n -1 g.db >agg.out
scan --format csv -n -1 g.db >scan.out
agg --format csv -n -1 x.db | cmp -s - agg.out && fail "TR_AGGREGATES_MIN=1 did not read the aggregates"
scan --format csv -n -1 x.db | cmp -s - scan.out || fail "TR_NO_AGGREGATES=1 read the aggregates"
rm -f x.db
# --stats is the scan's alone: its other columns are the aggregates' to the byte
python3 - agg.out <<'PY' >agg.rows
import csv, sys
for r in csv.reader(open(sys.argv[1])): print(r)
PY
agg --stats --format csv -n -1 g.db >stats.out
python3 - stats.out <<'PY' >stats.rows
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
keep = [i for i, k in enumerate(rows[0]) if k not in ("min_ns", "max_ns", "median_ns", "stddev_ns")]
if len(keep) != len(rows[0]) - 4: print("no stats columns")
for r in rows: print([r[i] for i in keep])
PY
cmp -s agg.rows stats.rows || { fail "--stats changes the other columns"; diff agg.rows stats.rows | head -4 >&2; }

# ---- the same scan by other ways (analyze/summary.c) ----
# w.db, v.db and x.db: the profiler's start mark (the first event, a leaf) takes a high
# id, so the aggregates' first events no longer hold the first start: --time-range's
# guess is 1 ns late and the flat scan starts over.  In w.db (id 5,000,000, below 2^23)
# --group-by-stack's tree comes from scan_tree_ids() over id-indexed arrays mostly
# empty; in v.db (9,000,000: past 2^23 and 4 ids an event) and x.db (past 2^27) from
# scan_tree() (every column sorted).
for wid in w:5000000 v:9000000 x:200000000; do
    db=${wid%%:*}.db id=${wid#*:}
    cp g.db "$db" && q "$db" "UPDATE events SET id = $id WHERE kind = 3 AND parent_id IS NULL
                              AND id NOT IN (SELECT parent_id FROM events WHERE parent_id IS NOT NULL)"
    expect_eq "$(q "$db" "SELECT id FROM events ORDER BY start_ns LIMIT 1")" "$id" "the first event moved"
    for args in "--group-by-stack 3 --format csv -n -1" "--group-by-stack 2 --sort none --units us" \
                "--group-by-stack 2 --stats --kind kernel,runtime --time-range $k1:$k2 --format csv -n -1" \
                "--group-by-stack 1 --include ^aten:: --exclude mul --format json -n -1" \
                "--time-range $k1:$k2 --format json -n -1" "--kind kernel --time-range $k1: --stats" \
                "--time-range $((k1 + 1)):$k2 --include sgemm --format csv -n -1"; do
        # shellcheck disable=SC2086
        "$BIN/trace-analyze" $args g.db >one.out 2>one.err || fail "g.db: $args"
        # shellcheck disable=SC2086
        "$BIN/trace-analyze" $args "$db" >two.out 2>two.err || fail "$db: $args"
        [ -s one.out ] || fail "no table with '$args'"
        cmp -s one.out two.out && cmp -s one.err two.err || {
            fail "the scan's ways differ ($db): '$args'"
            diff one.out two.out | head -6 >&2
        }
    done
done
rm -f g.db n.db w.db v.db x.db
