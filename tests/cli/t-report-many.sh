# A report that reads one run.db, given several (one per rank): it runs on each, and each
# of its tables is every run.db's rows with the rank in front -- exactly each run.db's own
# report, never summed across ranks; -n and --rank hold per run.db (docs/reports.md).
A="$BIN/trace-analyze"
if [ ! -x "$BIN/gen-kineto" ]; then
    skip "gen-kineto not built"
else
mkdir -p job && "$BIN/gen-kineto" -r 3 -n 2500 -o job/r >/dev/null || fail "gen-kineto -r 3"
for r in 0 1 2; do expect_status 0 "$BIN/trace-ingest" -q -o "job/r$r.db" "job/r$r.json"; done
# one more rank without steps or NCCL, from the single-process generator: a run.db with its own devices
"$BIN/gen-kineto" -n 2000 -o job/solo.json && expect_status 0 "$BIN/trace-ingest" -q --rank 3 -o job/r3.db job/solo.json
for rep in summary gpu-time kernels api memcpy nvtx nvtx-gpu launch gaps:min=1us steps advice; do
    for r in 0 1 2 3; do "$A" --report "$rep" --format json -n -1 "job/r$r.db" >"one$r.json" 2>/dev/null; done
    expect_status 0 "$A" --report "$rep" --format json -n -1 job/r0.db job/r1.db job/r2.db job/r3.db
    cp "$TMP/out" many.json
    python3 - one0.json one1.json one2.json one3.json many.json <<'PY' || fail "--report $rep over 4 run.dbs"
import json, sys
ones = [json.load(open(p))["reports"] for p in sys.argv[1:5]]
many = json.load(open(sys.argv[5]))["reports"][0]
want = {}   # title -> rows with their rank, in run.db order
for rank, rep in enumerate(ones):
    for t in (rep[0].get("tables", []) if rep else []):
        want.setdefault(t["title"], []).extend([dict(rank=str(rank), **row) for row in t["rows"]])
got = {t["title"]: t["rows"] for t in many.get("tables", [])}
assert got == want, (sorted(got), sorted(want), [k for k in want if got.get(k) != want[k]][:3])
PY
done
# -n holds per run.db, and says what it cut for each
expect_status 0 "$A" --report kernels -n 2 job/r0.db job/r1.db
expect_eq "$(grep -c '^[01] ' "$TMP/out")" 4 "two rows of each run.db"
expect_grep "rank 0: [0-9]* more rows" "$TMP/out"
expect_grep "rank 1: [0-9]* more rows" "$TMP/out"
# --rank: only the selected run.dbs' rows; a rank no run.db holds is bad input
expect_status 0 "$A" --report kernels --format csv -n -1 --rank 1,3 job/r0.db job/r1.db job/r2.db job/r3.db
expect_eq "$(cut -d, -f1 "$TMP/out" | grep -v '^rank$' | grep -E '^[0-9]+$' | sort -u | tr '\n' ' ')" "1 3 " "--rank 1,3"
expect_status 3 "$A" --report kernels --rank 7 job/r0.db job/r1.db
expect_status 2 "$A" --report kernels --diff job/r0.db job/r1.db
fi
