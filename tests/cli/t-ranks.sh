# Ranks (docs/diff.md, Ranks): every event's rank from distributedInfo, trace-ingest --rank
# or the order of the inputs; --rank filters tables, reports and exports exactly;
# --chrome keeps ranks apart; duplicate ranks and world sizes are warned about.

A="$BIN/trace-analyze" X="$BIN/trace-export" I="$BIN/trace-ingest"
# kineto OUT RANK WORLD PID KDUR: one step of mm+add on GPU 0 stream 7;
# RANK or WORLD "-" leaves it out of distributedInfo (both "-": no distributedInfo)
kineto() {
    python3 - "$@" <<'PY'
import json, sys
out, rank, world, pid, kdur = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
ev, t, corr = [], 1, 100
def op(name, dur, kernel=None, kd=0):
    global t, corr
    ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": pid, "tid": pid, "ts": t, "dur": dur})
    if kernel:
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": pid,
                   "ts": t + 1, "dur": 2, "args": {"correlation": corr, "cbid": 211}})
        ev.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": t + 4,
                   "dur": kd, "args": {"device": 0, "stream": 7, "correlation": corr}})
    t += dur + 40
ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": pid, "tid": pid,
           "ts": 0, "dur": 1000})
for i in range(3):
    op("aten::mm", 10 + i, "gemm", kdur + i)
    op("aten::add", 8, "add_kernel", 5)
d = {"schemaVersion": 1, "traceEvents": ev}
if rank != "-" or world != "-":
    d["distributedInfo"] = {"backend": "nccl"}
    if rank != "-":
        d["distributedInfo"]["rank"] = int(rank)
    if world != "-":
        d["distributedInfo"]["world_size"] = int(world)
json.dump(d, open(out, "w"))
PY
}
kineto r0.json 0 2 1 20 && kineto r1.json 1 2 1 31 && kineto n0.json - - 1 20 && kineto n1.json - - 2 31 \
    && kineto d0.json 0 2 9 40 && kineto r2.json 2 2 3 50 || { fail "cannot write the traces"; return 0; }
ranks() { q "$1" "select group_concat(coalesce(rank, 'NULL'), ',') from (select rank from sources order by id)"; }
listed() { "$A" --list ranks --format csv "$1" | tail -n +2 | cut -d, -f1 | tr '\n' ' '; }

# -- where a rank comes from --
expect_status 0 "$I" -q -o one.db r1.json
expect_eq "$(ranks one.db)" "1" "distributedInfo.rank is stored"
expect_eq "$(q one.db "select value from meta where key = 'world_size.1'")" "2" "world size kept as a meta row"
expect_status 0 "$I" -q --rank 7 -o one7.db r1.json
expect_eq "$(ranks one7.db)" "1" "distributedInfo wins over --rank"
expect_status 0 "$I" -q --rank 4 -o nr.db n0.json n1.json
expect_eq "$(ranks nr.db)" "4,5" "--rank N: N for the first input, N+1 for the next"
expect_status 2 "$I" -q --rank x -o bad.db n0.json
expect_one_line_error
expect_status 2 "$I" -q --rank -1 -o bad.db n0.json
expect_status 0 "$I" -q -o nn.db n0.json n1.json
expect_eq "$(ranks nn.db)" "NULL,NULL" "no rank information: nothing stored"
expect_eq "$(listed nn.db)" "0 1 " "--list ranks: the order of the inputs"
expect_status 0 "$I" -q -o single.db n0.json
expect_eq "$(listed single.db)" "0 " "a single trace without rank information is rank 0"
expect_status 0 "$A" --rank 0 single.db
expect_status 0 "$A" --report summary --rank 0 single.db
expect_no_grep "rank" "$TMP/out"
expect_status 0 "$X" --events --format csv -o single.csv single.db
expect_eq "$(cut -d, -f7 single.csv | sort -u | tr '\n' ' ')" "0 rank " "events of a rankless trace are rank 0"

# -- --rank filters exactly: rank 0 plus rank 1 is the whole --
expect_status 0 "$I" -q -o two.db r0.json r1.json
# totals OPTIONS: "calls self_cpu self_gpu" of the csv table's rows, summed (GPU: the device rows)
totals() { "$A" --format csv -n -1 "$@" | python3 -c 'import csv, sys
r = list(csv.DictReader(sys.stdin))
print(sum(int(x["calls"]) for x in r), sum(int(x["self_cpu_ns"]) for x in r), sum(int(x["self_gpu_ns"]) for x in r if x["device"] == "gpu"))'; }
whole=$(totals two.db) r0=$(totals --rank 0 two.db) r1=$(totals --rank 1 two.db)
expect_eq "$r0" "19 1000000 78000" "--rank 0's table"
expect_eq "$r1" "19 1000000 111000" "--rank 1's table"
expect_eq "$whole" "38 2000000 189000" "the whole table"
expect_eq "$(totals --rank 0,1 two.db)" "$whole" "--rank 0,1 is the whole"
expect_eq "$(totals --rank 0-1 two.db)" "$whole" "--rank 0-1 is the whole"
expect_eq "$(totals --rank 1 --kind kernel two.db)" "6 0 111000" "--rank with --kind"
# the order's ranks filter as stored ones do
expect_eq "$(totals --rank 1 nn.db)" "$r1" "--rank on ranks from the order"
# reports
expect_status 0 "$A" --report kernels --format csv --rank 1 two.db
expect_grep ',96000,3,32000,.*,gemm$' "$TMP/out"
expect_status 0 "$A" --report kernels --format csv two.db
expect_grep ',159000,6,.*,gemm$' "$TMP/out"
# exports: stacks, events, html
stack_sum() { "$X" --stacks --metric self_gpu "$@" | awk '{s += $NF} END {print s + 0}'; }
expect_eq "$(stack_sum --rank 0 two.db) $(stack_sum --rank 1 two.db) $(stack_sum two.db)" "78000 111000 189000" \
    "--stacks: rank 0 + rank 1 = the whole"
expect_status 0 "$X" --events --rank 1 -o ev1.jsonl two.db
expect_status 0 "$X" --events -o ev.jsonl two.db
python3 - <<'PY' || fail "--events --rank 1: only rank 1's events, all of them"
import json
a = [json.loads(l) for l in open("ev.jsonl")]
b = [json.loads(l) for l in open("ev1.jsonl")]
assert {r["rank"] for r in a} == {0, 1}, {r["rank"] for r in a}
assert b == [r for r in a if r["rank"] == 1] and len(b) == 19, len(b)
PY
expect_status 0 "$X" --html --rank 1 -o r1.html two.db
expect_grep '96\.000' r1.html
expect_no_grep '159\.000' r1.html
expect_grep 'rank 1 tid 1' r1.html
expect_no_grep 'rank 0 tid' r1.html
expect_grep 'Run: the whole file. The tables and the timeline below: rank 1 only.' r1.html
expect_status 0 "$X" --html -o all.html two.db
expect_no_grep 'Run: the whole file' all.html
# --list: what the selected ranks hold
expect_status 0 "$A" --list kinds --rank 1 --format csv two.db
expect_grep '^kernel,gpu,6,111000$' "$TMP/out"
expect_status 0 "$A" --list kinds --format csv two.db
expect_grep '^kernel,gpu,12,189000$' "$TMP/out"
expect_eq "$("$A" --list threads --rank 0 --format csv two.db | tail -n +2 | cut -d, -f4)" "13" "--list threads --rank 0"
expect_eq "$("$A" --list ranks --rank 1 --format csv two.db | tail -n +2 | cut -d, -f1,5)" "1,r1.json" \
    "--list ranks --rank 1"
# an absent rank: a clear message, as for an absent --device
expect_status 3 "$A" --rank 5 two.db
expect_one_line_error
expect_grep 'no rank 5 (ranks: 0-1' "$TMP/err"
expect_status 3 "$X" --stacks --rank 5 two.db
expect_one_line_error
expect_status 2 "$A" --rank 1-0 two.db
expect_status 2 "$A" --rank a two.db

# -- many run.dbs: a run.db without ranks takes its place in the argument list --
expect_status 0 "$I" -q -o a.db n0.json
expect_status 0 "$I" -q -o b.db n1.json
expect_eq "$(totals --rank 1 a.db b.db)" "$r1" "many run.dbs: the second is rank 1"
expect_eq "$(totals --rank 0 a.db b.db)" "$r0" "many run.dbs: the first is rank 0"
expect_status 0 "$A" a.db b.db
expect_no_grep 'warning' "$TMP/err"
expect_status 3 "$A" --rank 2 a.db b.db
expect_grep 'no rank 2' "$TMP/err"
# --list over many run.dbs: one table, each row naming its run.db, the ranks as --rank reads them
expect_status 0 "$A" --list ranks --format csv a.db b.db one.db
expect_eq "$(tail -n +2 "$TMP/out" | cut -d, -f1,2,6 | tr '\n' ' ')" "a.db,0,n0.json b.db,1,n1.json one.db,1,r1.json " \
    "--list ranks over many run.dbs"
expect_status 0 "$A" --list ranks --rank 1 --format csv a.db b.db
expect_eq "$(tail -n +2 "$TMP/out" | cut -d, -f1,2 | tr '\n' ' ')" "b.db,1 " "--list ranks --rank 1 over many run.dbs"
expect_status 0 "$A" --list kinds --rank 1 --format csv a.db two.db
expect_eq "$(grep -c ',kernel,gpu,6,111000$' "$TMP/out")" "1" "--list kinds --rank 1 over many run.dbs"
expect_eq "$(cut -d, -f1 "$TMP/out" | sort -u | tr '\n' ' ')" "run_db two.db " "--list: only the selected rank's run.db has rows"
expect_status 0 "$A" --list threads a.db b.db
expect_grep '^run\.db  thread' "$TMP/out"
expect_status 2 "$A" --list ranks --diff a.db b.db
expect_one_line_error
# --diff: each run's ranks count from 0
expect_status 0 "$A" --diff --rank 0 --format csv a.db b.db
expect_grep 'gemm' "$TMP/out"

# -- duplicate ranks and world sizes: one warning line each, never a failure --
expect_status 0 "$I" -o dup.db r0.json d0.json
expect_grep 'warning: rank 0 is claimed by r0.json and d0.json' "$TMP/err"
expect_status 0 "$I" -q -o ra.db r0.json
expect_status 0 "$I" -q -o rb.db d0.json
expect_status 0 "$A" ra.db rb.db
expect_eq "$(grep -c 'warning: rank 0 is claimed by ra.db and rb.db' "$TMP/err")" "1" "duplicate ranks across run.dbs"
expect_status 0 "$I" -q -o gap.db r0.json r2.json
expect_status 0 "$A" gap.db one.db
expect_grep 'warning: the traces give world size 2 but the inputs hold 3 rank(s): 0-2' "$TMP/err"
expect_status 0 "$A" ra.db one.db
expect_no_grep 'warning' "$TMP/err"
# a missing distributedInfo never fails, an empty one neither
printf '{"distributedInfo":{},"traceEvents":[{"name":"x","ph":"X","cat":"cpu_op","ts":1,"dur":5,"pid":1,"tid":1}]}' >e.json
expect_status 0 "$I" -q -o e.db e.json
expect_eq "$(listed e.db)" "0 " "an empty distributedInfo: rank 0"

# -- an old run.db, no rank stored: the sources' order --
cp two.db old.db && q old.db "update sources set rank = NULL" || fail "cannot make the old run.db"
expect_eq "$(listed old.db)" "0 1 " "old run.db: --list ranks"
expect_eq "$(totals --rank 1 old.db)" "$r1" "old run.db: --rank 1"
expect_status 0 "$X" --events --format csv -o old.csv old.db
expect_eq "$(cut -d, -f7 old.csv | sort | uniq -c | tr -s ' ' | tr '\n' ';')" " 19 0; 19 1; 1 rank;" \
    "old run.db: --events ranks from the order"

# older still: no sources.rank column at all
if cp two.db nocol.db && q nocol.db "ALTER TABLE sources DROP COLUMN rank" 2>/dev/null; then
    expect_eq "$(listed nocol.db)" "0 1 " "no rank column: --list ranks"
    expect_eq "$(totals --rank 1 nocol.db)" "$r1" "no rank column: --rank 1"
fi

# -- --chrome: each rank's processes and GPUs are processes of their own --
expect_status 0 "$X" --chrome -o two.json two.db
python3 - <<'PY' || fail "--chrome keeps ranks apart"
import json
d = json.load(open("two.json"))
ev = d["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
sort = {e["pid"]: e["args"]["sort_index"] for e in ev if e.get("name") == "process_sort_index"}
# both traces use pid 1 and GPU 0: four processes all the same
assert sorted(names.values()) == ["rank 0: GPU 0", "rank 0: process 1", "rank 1: GPU 0", "rank 1: process 1"], names
by = {v: k for k, v in names.items()}
pids = {e["pid"] for e in ev if e["ph"] == "X"}
assert pids == set(names), (pids, names)
# sorted by rank: rank 0's host, rank 0's GPU, rank 1's host, rank 1's GPU
order = sorted(names, key=lambda p: sort[p])
assert [names[p] for p in order] == ["rank 0: process 1", "rank 0: GPU 0", "rank 1: process 1", "rank 1: GPU 0"], order
# each rank's kernels are on its own GPU: rank 1's gemms are 31, 32, 33 us
g1 = sorted(e["dur"] for e in ev if e["ph"] == "X" and e["name"] == "gemm" and e["pid"] == by["rank 1: GPU 0"])
assert g1 == [31, 32, 33], g1
# flows start on the launching rank's host process
s = {e["pid"] for e in ev if e["ph"] == "s"}
assert s == {by["rank 0: process 1"], by["rank 1: process 1"]}, s
PY
expect_status 0 "$X" --chrome --rank 1 -o one-rank.json two.db
python3 - <<'PY' || fail "--chrome --rank 1: rank 1's processes only"
import json
ev = json.load(open("one-rank.json"))["traceEvents"]
names = sorted(e["args"]["name"] for e in ev if e.get("name") == "process_name")
assert names == ["rank 1: GPU 0", "rank 1: process 1"], names
assert len([e for e in ev if e["ph"] == "X"]) == 19
PY
# a pid beyond the per-rank blocks of ids (and a second GPU on rank 0): still one process each
cp two.db bigpid.db
q bigpid.db "UPDATE processes SET pid = 3000000000 WHERE id = (SELECT min(id) FROM processes);
    INSERT INTO devices(id, source_id, device, name_id) SELECT max(id) + 1, 1, 1, NULL FROM devices"
expect_status 0 "$X" --chrome -o bigpid.json bigpid.db
python3 - <<'PY' || fail "--chrome with a pid past the blocks keeps ranks apart"
import json
ev = json.load(open("bigpid.json"))["traceEvents"]
names = [(e["pid"], e["args"]["name"]) for e in ev if e.get("name") == "process_name"]
assert len({p for p, _ in names}) == len(names) == 5, names
assert "rank 0: process 3000000000" in [n for _, n in names], names
PY
# one rank: the layout of Kineto, unchanged
expect_status 0 "$X" --chrome -o one.json one.db
expect_no_grep 'rank 1:' one.json
# the chrome export of two ranks reads back with the same totals
expect_status 0 "$I" -q -o back.db two.json
expect_eq "$(totals back.db)" "$whole" "the two-rank chrome trace read back"
# a stored rank that is not a whole number >= 0 is bad input, named, in every tool
for bad in "'abc'" 2.7 -5; do
    cp two.db badrank.db
    q badrank.db "UPDATE sources SET rank = $bad WHERE id = 1"
    expect_status 3 "$A" badrank.db
    expect_one_line_error
    expect_grep "badrank.db: table sources: source 1 has rank" "$TMP/err"
    expect_status 3 "$X" --stacks -o badrank.folded badrank.db
    expect_no_file badrank.folded
done
# a negative rank or world size in distributedInfo is not a rank: ingest leaves it out,
# says so, and every tool reads what it wrote
kineto neg.json -5 0 1 20 || fail "cannot write neg.json"
expect_status 0 "$I" -o neg.db neg.json
expect_grep 'distributedInfo gives rank -5 of world size 0: ignored' "$TMP/err"
expect_eq "$(ranks neg.db)" "NULL" "the rank of neg.db"
expect_status 0 "$A" neg.db
expect_status 0 "$A" --report ranks neg.db
expect_status 0 "$X" --chrome -o neg.json.out neg.db
