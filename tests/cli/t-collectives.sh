# --report collectives on a synthetic 8-rank job (gen-kineto -r) whose clock offsets,
# straggler and collectives are known by construction: from one run.db holding every
# rank and from one run.db per rank.  Every call is paired on all ranks, every arrival
# skew is >= 0 and no call ends on a rank before another starts it, the recovered
# clock offsets equal the injected ones within 2 us (the generator's end noise is
# below 1 us), and the residual-skew warning fires when the noise is 1 ms.

A="$BIN/trace-analyze"
I="$BIN/trace-ingest"
G="$BIN/gen-kineto"
[ -x "$G" ] || { skip "gen-kineto not built"; return 0 2>/dev/null || exit 0; }
cd "$TMP" || exit 1

N=8
expect_status 0 "$G" -r $N -n 20000 -s 7 -S 5 -o rank
cp "$TMP/out" injected.txt
expect_eq "$(grep -c '^rank ' injected.txt)" $N "ranks written"
expect_grep '^straggler 5$' injected.txt
files=""
for r in $(seq 0 $((N - 1))); do files="$files rank$r.json"; done
# shellcheck disable=SC2086
expect_status 0 "$I" -q -o all.db $files
for r in $(seq 0 $((N - 1))); do
    expect_status 0 "$I" -q -o rank$r.db rank$r.json
done
calls=$(grep -o '"cat": "kernel", "name": "nccl' rank0.json | wc -l)
[ "$calls" -gt 20 ] || fail "only $calls collectives per rank generated"

# check CSV INJECTED LABEL [noise]: every call paired, skews >= 0, offsets as injected
check() {
    python3 - "$@" <<'PY'
import csv, sys
path, injected, label, n, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
tables, cur = [], None
for row in csv.reader(open(path)):
    if not row:
        cur = None
        continue
    if cur is None:
        cur = {"header": row, "rows": []}
        tables.append(cur)
        continue
    cur["rows"].append(dict(zip(cur["header"], row)))
bad = []
calls_t, ranks_t, parts_t = tables[0]["rows"], tables[1]["rows"], tables[2]["rows"]
if len(parts_t) != n * calls:
    bad.append("%d parts, not %d ranks x %d calls" % (len(parts_t), n, calls))
if any(int(p["wait_ns"]) < 0 or int(p["dur_ns"]) <= 0 for p in parts_t):
    bad.append("a part with a negative wait or no duration")
# each call's skew is its longest wait
waits = {}
for p in parts_t:
    waits[p["call"]] = max(waits.get(p["call"], 0), int(p["wait_ns"]))
if any(waits[c["call"]] != int(c["skew_ns"]) for c in calls_t):
    bad.append("a call's skew is not its longest wait")
if len(calls_t) != calls:
    bad.append("%d calls matched, %d per rank" % (len(calls_t), calls))
for c in calls_t:
    if int(c["ranks"]) != n:
        bad.append("call %s (%s %s seq %s) on %s of %d ranks" % (c["call"], c["pg"], c["op"], c["seq"], c["ranks"], n))
    if int(c["skew_ns"]) < 0:
        bad.append("call %s: skew %s" % (c["call"], c["skew_ns"]))
    if not (int(c["dur_min_ns"]) <= int(c["dur_median_ns"]) <= int(c["dur_max_ns"])):
        bad.append("call %s: durations out of order" % c["call"])
    if c["op"] == "allreduce" and (c["bytes"] == "" or c["algbw_gbps"] == ""):
        bad.append("call %s: no size or bandwidth" % c["call"])
want = {}
for line in open(injected):
    f = line.split()
    if f[0] == "rank":
        want[int(f[1])] = int(f[3])
    elif f[0] == "straggler":
        straggler = int(f[1])
if len(ranks_t) != n:
    bad.append("%d ranks in the rank table" % len(ranks_t))
for r in ranks_t:
    got, exp = int(r["offset_ns"]), want[int(r["rank"])]
    if abs(got - exp) > 2000:
        bad.append("rank %s: offset %d, injected %d" % (r["rank"], got, exp))
# the straggler comes in last most often and waits least
last = max(ranks_t, key=lambda r: int(r["last_in"]))
if int(last["rank"]) != straggler:
    bad.append("rank %s came in last most often, the straggler is %d" % (last["rank"], straggler))
least = min(ranks_t, key=lambda r: int(r["wait_ns"]))
if int(least["rank"]) != straggler:
    bad.append("rank %s waited least, the straggler is %d" % (least["rank"], straggler))
# the straggler's delay (300 us) is the first collective's skew of every step
first = [int(c["skew_ns"]) for c in calls_t if c["bytes"] == "16777216"]
if not first or min(first) < 290000 or max(first) > 310000:
    bad.append("straggler skews %s, not about 300 us" % first[:4])
for b in bad[:10]:
    print("%s: %s" % (label, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# one run.db holding all ranks: offsets stored at ingest, then used
expect_status 0 "$A" --report collectives --format csv -n -1 all.db
cp "$TMP/out" one.csv
check one.csv injected.txt "one run.db" $N "$calls" || fail "collectives of one run.db with every rank"
expect_eq "$(q all.db 'SELECT count(*) FROM clock_offsets')" $N "clock_offsets rows"
expect_eq "$(q all.db "SELECT count(*) FROM clock_offsets WHERE method = 'collectives'")" $((N - 1)) "refined offsets"
expect_eq "$(q all.db 'SELECT count(*) FROM collectives')" $((N * calls)) "collectives rows"
expect_eq "$(q all.db "SELECT count(*) FROM collectives WHERE pg IS NULL OR seq IS NULL OR bytes IS NULL")" 0 \
    "collectives without their parameters"
python3 - injected.txt all.db <<'PY' || fail "stored offsets differ from the injected ones"
import sqlite3, sys
want = {int(l.split()[1]): int(l.split()[3]) for l in open(sys.argv[1]) if l.startswith("rank ")}
db = sqlite3.connect(sys.argv[2])
for rank, off in db.execute("SELECT s.rank, o.offset_ns FROM clock_offsets o JOIN sources s ON s.id = o.source_id"):
    if abs(off - want[rank]) > 2000:
        print("rank", rank, "stored", off, "injected", want[rank], file=sys.stderr)
        sys.exit(1)
PY

# one run.db per rank: the analysis computes the same offsets
# shellcheck disable=SC2086
expect_status 0 "$A" --report collectives --format csv -n -1 $(for r in $(seq 0 $((N - 1))); do echo rank$r.db; done)
cp "$TMP/out" many.csv
check many.csv injected.txt "one run.db per rank" $N "$calls" || fail "collectives of one run.db per rank"
# the calls table is the same either way
python3 - one.csv many.csv <<'PY' || fail "the calls differ between one run.db and one per rank"
import sys
a = open(sys.argv[1]).read().split("\n\n")[0]
b = open(sys.argv[2]).read().split("\n\n")[0]
sys.exit(a != b)
PY
expect_no_grep "warning" "$TMP/err"
# in any order on the command line: ranks are the traces' own
expect_status 0 "$A" --report collectives --format csv -n -1 rank3.db rank0.db rank7.db rank1.db rank2.db rank6.db \
    rank5.db rank4.db
python3 - many.csv "$TMP/out" <<'PY' || fail "the order of the run.dbs changes the calls"
import sys
a = open(sys.argv[1]).read().split("\n\n")[0]
b = open(sys.argv[2]).read().split("\n\n")[0]
sys.exit(a != b)
PY

# text, json and markdown render; no residual warning at 1 us of noise
expect_status 0 "$A" --report collectives all.db
expect_grep "8 rank(s), $calls call(s), $calls paired on every rank of their group" "$TMP/out"
expect_no_grep "warning" "$TMP/out"
# --diff of one rank of the job against that rank's own run.db: equal, header included;
# a side without the rank is empty, and said to be
expect_status 0 "$A" --diff --rank 1 all.db rank1.db
h=$(head -1 "$TMP/out")
expect_eq "$(echo "$h" | sed -E 's/: ([^;]*) -> \1(;|$)/ same\2/g')" \
    "Self CPU time total same; Self CUDA time total same; Span same; GPU busy same" "--diff --rank 1 all.db rank1.db: $h"
expect_status 0 "$A" --diff --rank 1 all.db rank0.db
expect_grep 'rank0.db holds none of the selected ranks' "$TMP/err"
# the same run.db twice is said to count twice, for the table and the reports alike
for r in "" "--report collectives" "--report ranks"; do
    # shellcheck disable=SC2086
    expect_status 0 "$A" $r rank0.db rank1.db rank1.db
    expect_grep 'warning: rank1.db is rank1.db again: its events count twice' "$TMP/err"
done
# a rank's trace missing: the group of 8 is not whole, no call is paired
expect_status 0 "$A" --report collectives rank0.db rank1.db rank2.db rank3.db rank4.db rank5.db rank7.db
expect_grep "7 rank(s), $calls call(s), 0 paired on every rank of their group" "$TMP/out"
expect_status 0 "$A" --report collectives --format json all.db
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["reports"][0]["tables"][0]["rows_total"] > 0' \
    "$TMP/out" || fail "collectives json"
expect_status 0 "$A" --report collectives --format markdown all.db
expect_grep "^## collectives" "$TMP/out"

# --rank keeps those ranks (offsets still from all): the straggler against rank 0
for input in all.db "rank0.db rank5.db rank3.db"; do
    # shellcheck disable=SC2086
    expect_status 0 "$A" --report collectives --rank 0,5 --format csv -n -1 $input
    python3 - "$TMP/out" "$calls" injected.txt <<'PY' || fail "--rank 0,5 on $input"
import csv, sys
t = open(sys.argv[1]).read().split("\n\n")
calls = list(csv.DictReader(t[0].splitlines()))
ranks = list(csv.DictReader(t[1].splitlines()))
want = {int(l.split()[1]): int(l.split()[3]) for l in open(sys.argv[3]) if l.startswith("rank ")}
assert [r["rank"] for r in ranks] == ["0", "5"], ranks
assert abs(int(ranks[1]["offset_ns"]) - want[5]) <= 2000, ranks[1]
assert len(calls) == int(sys.argv[2]) and all(c["ranks"] == "2" for c in calls)
assert all(c["last_in"] == "5" for c in calls if c["bytes"] == "16777216")
PY
done

# rank 3's profiler starts one step late: its calls still pair by their sequence numbers,
# and the first step's three calls are on 7 ranks
python3 - rank3.json late3.json <<'PY' || fail "cannot cut rank 3"
import json, sys
d = json.load(open(sys.argv[1]))
t1 = min(e["ts"] for e in d["traceEvents"] if e.get("name") == "ProfilerStep#1")
d["traceEvents"] = [e for e in d["traceEvents"] if e.get("ts", 0) >= t1]
json.dump(d, open(sys.argv[2], "w"))
PY
expect_status 0 "$I" -q -o late3.db late3.json
# shellcheck disable=SC2086
expect_status 0 "$A" --report collectives --format csv -n -1 rank0.db rank1.db rank2.db late3.db rank4.db rank5.db \
    rank6.db rank7.db
python3 - "$TMP/out" "$calls" injected.txt <<'PY' || fail "a late profiler on one rank"
import csv, sys
t = open(sys.argv[1]).read().split("\n\n")
calls = list(csv.DictReader(t[0].splitlines()))
ranks = list(csv.DictReader(t[1].splitlines()))
want = {int(l.split()[1]): int(l.split()[3]) for l in open(sys.argv[3]) if l.startswith("rank ")}
assert len(calls) == int(sys.argv[2]), len(calls)
short = [c for c in calls if c["ranks"] != "8"]
assert len(short) == 3 and all(c["ranks"] == "7" and c["seq"] in ("0", "1") for c in short), short
assert all(int(c["skew_ns"]) >= 0 for c in calls)
assert all(abs(int(r["offset_ns"]) - want[int(r["rank"])]) <= 2000 for r in ranks), ranks
PY

# a run.db written before the collectives table: the kernels are found by name
cp all.db old.db
q old.db "DROP TABLE collectives; DROP TABLE clock_offsets"
expect_status 0 "$A" --report collectives --format csv -n -1 old.db
python3 - "$TMP/out" $N "$calls" <<'PY' || fail "collectives by kernel name"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]).read().split("\n\n")[0].splitlines()))
assert len(rows) == int(sys.argv[3]), len(rows)
assert all(r["ranks"] == sys.argv[2] and int(r["skew_ns"]) >= 0 and r["bytes"] == "" for r in rows)
assert {r["op"] for r in rows} == {"allreduce", "allgather"}
PY

# 1 ms of noise on every end: the residual skew warning fires
expect_status 0 "$G" -r 4 -n 8000 -N 1000 -o noisy
expect_status 0 "$I" -q -o noisy.db noisy0.json noisy1.json noisy2.json noisy3.json
expect_status 0 "$A" --report collectives noisy.db
expect_grep "warning: residual clock skew" "$TMP/out"
expect_grep "^trace-analyze: collectives: warning: residual clock skew" "$TMP/err"
# ... and a threshold above it silences it
expect_status 0 "$A" --report collectives:warn=10ms noisy.db
expect_no_grep "warning: residual" "$TMP/out"
expect_no_grep "warning" "$TMP/err"

# a trace without collectives says so in one line, and nothing else
expect_status 0 "$G" -n 2000 -o plain.json
expect_status 0 "$I" -q -o plain.db plain.json
expect_status 0 "$A" --report collectives plain.db
expect_one_line_error
expect_grep "no NCCL/RCCL collectives" "$TMP/err"
[ -s "$TMP/out" ] && fail "output without collectives: $(head -c 200 "$TMP/out")"

# a rank without collectives (a CPU-only process, here rank 0 by position) anchors no one:
# the reference is the lowest rank that has some
expect_status 0 "$I" -q -o mixed.db plain.json rank1.json rank2.json
expect_status 0 "$A" --report collectives --format csv -n -1 mixed.db
python3 - "$TMP/out" injected.txt <<'PY' || fail "the reference rank"
import csv, sys
ranks = list(csv.DictReader(open(sys.argv[1]).read().split("\n\n")[1].splitlines()))
want = {int(l.split()[1]): int(l.split()[3]) for l in open(sys.argv[2]) if l.startswith("rank ")}
by = {r["rank"]: r for r in ranks}
assert by["1"]["method"] == "reference" and by["1"]["offset_ns"] == "0", by["1"]
assert by["0"]["method"] == "anchor" and by["0"]["calls"] == "0", by["0"]
assert abs(int(by["2"]["offset_ns"]) - (want[2] - want[1])) <= 2000, (by["2"], want)
PY
expect_status 0 "$A" --report collectives mixed.db
expect_grep "clocks aligned to rank 1's" "$TMP/out"

# reports that are not rank-aware read each run.db in turn (t-report-many.sh), beside this one
expect_status 0 "$A" --report collectives,summary rank0.db rank1.db
expect_grep "== collectives" "$TMP/out"
expect_grep "^1 *source 1" "$TMP/out"
true
