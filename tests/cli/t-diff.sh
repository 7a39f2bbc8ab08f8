# trace-analyze --diff BASE.db NEW.db, and trace-export --diff: synthetic Kineto runs with
# known changes (one kernel 2x slower, one op new, one op gone).

# kineto OUT VARIANT STEP [PREFIX]: three mm+add iterations under ProfilerStep#STEP;
# "slow" doubles gemm and runs aten::fresh where the base runs aten::stale;
# "wide" names the gemm kernel with 256 in its template arguments
kineto() {
    python3 - "$@" <<'PY'
import json, sys
out, variant, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
prefix = sys.argv[4] if len(sys.argv) > 4 else ""
ev, t, corr = [], 1, 100
def op(name, dur, kernel=None, kdur=0):
    global t, corr
    ev.append({"ph": "X", "cat": "cpu_op", "name": prefix + name, "pid": 1, "tid": 1, "ts": t, "dur": dur})
    if kernel:
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t + 1, "dur": 2, "args": {"correlation": corr, "cbid": 211}})
        ev.append({"ph": "X", "cat": "kernel", "name": prefix + kernel, "pid": 0, "tid": 7, "ts": t + 4,
                   "dur": kdur, "args": {"device": 0, "stream": 7, "correlation": corr}})
    t += dur + 40
ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step, "pid": 1, "tid": 1,
           "ts": 0, "dur": 1000})
gemm = "void gemm<float, %d>(float*)" % (256 if variant == "wide" else 128)
for i in range(3):
    op("aten::mm", 10, gemm, 40 if variant == "slow" else 20)
    op("aten::add", 8, "add_kernel", 5)
op("aten::fresh" if variant == "slow" else "aten::stale", 6)
json.dump({"schemaVersion": 1, "traceEvents": ev}, open(out, "w"))
PY
}
A="$BIN/trace-analyze"
kineto base.json base 1 && kineto new.json slow 2 && kineto wide.json wide 7 && kineto other.json base 1 x_ \
    && kineto slow1.json slow 1 \
    || { fail "cannot write the traces"; return 0; }
for r in base new wide other slow1; do
    "$BIN/trace-ingest" -q -o $r.db $r.json || fail "cannot ingest $r.json"
done

# ---- a run against itself: every delta 0, no marker, in every grouping
for g in "" --group-by-shape "--group-by-stack 3"; do
    expect_status 0 "$A" --diff --format csv -n -1 $g base.db base.db
    python3 - "$TMP/out" <<'PY' || fail "self diff ($g) has a change"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows, "no rows"
for r in rows:
    assert r["delta"] == "0" and r["change"] == "" and r["delta_pct"] in ("0", ""), r
    for k in ("calls", "self_cpu_ns", "cpu_total_ns", "self_gpu_ns", "gpu_total_ns"):
        assert r["base_" + k] == r["new_" + k], (k, r)
PY
done

# ---- the injected changes come first, with the right markers, and nothing else changed
expect_status 0 "$A" --diff --format csv -n -1 base.db new.db
cp "$TMP/out" diff.csv
python3 - diff.csv <<'PY' || fail "the injected changes are not exactly the top rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
top = [(r["name"], r["change"], r["delta"], r["delta_pct"]) for r in rows[:4]]
want = [("aten::mm", "", "60000", "100"), ("void gemm<float, 128>(float*)", "", "60000", "100"),
        ("aten::fresh", "new", "0", ""), ("aten::stale", "gone", "0", "")]
assert top == want, top
fresh = rows[2]
assert fresh["base_calls"] == "0" and fresh["new_calls"] == "1" and fresh["new_self_cpu_ns"] == "6000", fresh
for r in rows[4:]:
    assert r["delta"] == "0" and r["change"] == "", r
    assert r["base_self_cpu_ns"] == r["new_self_cpu_ns"], r
PY
expect_status 0 "$A" --diff base.db new.db
head -1 "$TMP/out" >header
expect_grep 'Self CUDA time total: 75.000us -> 135.000us' header
expect_grep 'GPU busy: 7.50% -> 13.50%' header
expect_grep 'Span: 1.000ms -> 1.000ms' header
sed -n 4p "$TMP/out" | grep -q '^aten::mm .*+60.000us *+100.00%' || fail "text row of aten::mm: $(sed -n 4p "$TMP/out")"
grep -q '^aten::fresh .* new *$' "$TMP/out" || fail "no 'new' marker in the text table"
grep -q '^aten::stale .* gone *$' "$TMP/out" || fail "no 'gone' marker in the text table"
# another sort key: the change of the call count puts nothing above the new and gone ops
expect_status 0 "$A" --diff --format csv -s count base.db new.db
expect_eq "$(sed -n 2,3p "$TMP/out" | cut -d, -f1 | tr '\n' ' ')" "aten::fresh aten::stale " "rows by count change"

# ---- totals in the diff are those of each run's own table
for r in base new; do
    "$A" --format json -n -1 $r.db >$r-table.json && "$A" $r.db >$r-table.txt || fail "table of $r.db"
done
expect_status 0 "$A" --diff --format json -n -1 base.db new.db
python3 - "$TMP/out" base-table.json new-table.json <<'PY' || fail "diff totals differ from the tables'"
import json, sys
d = json.load(open(sys.argv[1]))
for side, path in (("base", sys.argv[2]), ("new", sys.argv[3])):
    t = json.load(open(path))
    for k in ("events", "self_cpu_total_ns", "self_gpu_total_ns"):
        assert d[side][k] == t[k], (side, k, d[side][k], t[k])
    for k in ("self_cpu_ns", "self_gpu_ns", "cpu_total_ns", "gpu_total_ns", "calls"):
        assert sum(r[side + "_" + k] for r in d["rows"]) == sum(r[k] for r in t["rows"]), (side, k)
PY
for r in base new; do
    tot=$(sed -n 's/^Self CPU time total: //p' $r-table.txt)
    [ -n "$tot" ] || fail "no total in the table of $r.db"
done
expect_grep "Self CPU time total: $(sed -n 's/^Self CPU time total: //p' base-table.txt) -> $(sed -n 's/^Self CPU time total: //p' new-table.txt);" header

# and under a selection that shows no device rows: the GPU time the host rows launched
"$A" --kind op base.db >op-table.txt || fail "op table"
expect_status 0 "$A" --diff --kind op base.db base.db
gpu=$(sed -n 's/^Self CUDA time total: \([^ ]*\).*/\1/p' op-table.txt)
[ -n "$gpu" ] && [ "$gpu" != 0.000us ] || fail "the op table has no launched GPU total: '$gpu'"
expect_grep "Self CUDA time total: $gpu -> $gpu;" "$TMP/out"

# ---- no common groups: every row new or gone
expect_status 0 "$A" --diff --format csv -n -1 --exclude '^(cudaLaunchKernel|ProfilerStep)' base.db other.db
python3 - "$TMP/out" <<'PY' || fail "disjoint runs are not all new/gone"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ch = sorted(r["change"] for r in rows)
assert ch == ["gone"] * 5 + ["new"] * 5, ch
PY

# ---- --diff-normalize: template numbers and ProfilerStep#N
expect_status 0 "$A" --diff --format csv -n -1 base.db wide.db
expect_grep 'gemm<float, 128>.*gone' "$TMP/out"
expect_grep 'gemm<float, 256>.*new' "$TMP/out"
expect_status 0 "$A" --diff --diff-normalize --format csv -n -1 --group-by-stack 3 base.db wide.db
expect_no_grep 'new$' "$TMP/out"
expect_no_grep 'gone$' "$TMP/out"
expect_grep '^"void gemm<float, N>(float\*)",gpu,3,3,' "$TMP/out"
expect_grep 'ProfilerStep\*' "$TMP/out"
expect_no_grep 'ProfilerStep#' "$TMP/out"

# ---- formats: json parses, markdown has the totals line and escapes names
expect_status 0 "$A" --diff --format json base.db new.db
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["rows"][0]["delta"] == 60000' "$TMP/out" \
    || fail "diff json"
expect_status 0 "$A" --diff --format markdown base.db new.db
expect_grep '^Self CPU time total: ' "$TMP/out"
expect_grep '^| void gemm\\<float, 128>(float\\\*) |' "$TMP/out"

# ---- bad input and usage
echo 'not a database' >text.db
expect_status 3 "$A" --diff text.db new.db
expect_one_line_error
expect_grep 'text.db' "$TMP/err"
expect_status 3 "$A" --diff base.db text.db
cp base.db old.db && q old.db 'PRAGMA user_version = 0'
expect_status 3 "$A" --diff base.db old.db
expect_one_line_error
expect_grep 'old.db: run database schema version 0 is older' "$TMP/err"
expect_status 2 "$A" --diff base.db
expect_status 2 "$A" --diff base.db new.db wide.db
expect_status 2 "$A" --diff-normalize base.db new.db

# ---- trace-export --diff: two-column folded stacks and the differential flamegraph
X="$BIN/trace-export"
sum_col() { awk -v c="$2" '{ s += $(NF - c) } END { print s + 0 }' "$1"; }
expect_status 0 "$X" --stacks --diff -o same.folded base.db base.db
awk '$(NF-1) != $NF { bad = 1 } END { exit bad }' same.folded || fail "a run against itself differs in its stacks"
"$X" --stacks -o base.folded base.db && "$X" --stacks -o new.folded slow1.db || fail "plain stacks"
expect_status 0 "$X" --stacks --diff -o diff.folded base.db slow1.db
expect_eq "$(sum_col diff.folded 1)" "$(sum_col base.folded 0)" "base column sum"
expect_eq "$(sum_col diff.folded 0)" "$(sum_col new.folded 0)" "new column sum"
expect_grep '^ProfilerStep#1;aten::fresh 0 6000$' diff.folded
expect_grep '^ProfilerStep#1;aten::stale 6000 0$' diff.folded
expect_grep '^ProfilerStep#1;aten::add 18000 18000$' diff.folded
expect_status 0 "$X" --stacks --diff --metric self_gpu base.db slow1.db
expect_grep '^ProfilerStep#1;aten::mm;cudaLaunchKernel;void gemm<float, 128>(float\*) 60000 120000$' "$TMP/out"
expect_status 0 "$X" --stacks --diff --diff-normalize --metric self_gpu base.db wide.db
expect_grep '^ProfilerStep\*;aten::mm;cudaLaunchKernel;void gemm<float, N>(float\*) 60000 60000$' "$TMP/out"
# without it, different step numbers are different stacks
expect_status 0 "$X" --stacks --diff base.db new.db
expect_grep '^ProfilerStep#2;aten::add 0 18000$' "$TMP/out"
# colours: the slower kernel red in base->new, blue in new->base; an unchanged frame grey
fill_of() { python3 - "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
for g in ET.parse(sys.argv[1]).getroot().iter("{http://www.w3.org/2000/svg}g"):
    t = g.find("s:title", ns)
    if t is not None and t.text.startswith(sys.argv[2] + " ("):
        print(g.find("s:rect", ns).get("fill")); break
PY
}
expect_status 0 "$X" --flamegraph --diff --metric self_gpu -o up.svg base.db slow1.db
expect_eq "$(fill_of up.svg 'void gemm<float, 128>(float*)')" "rgb(255,110,110)" "grown kernel colour"
expect_eq "$(fill_of up.svg add_kernel)" "rgb(235,235,235)" "unchanged kernel colour"
expect_grep 'data-fg-total="135000" data-fg-base-total="75000"' up.svg
expect_status 0 "$X" --flamegraph --diff --metric self_gpu -o down.svg slow1.db base.db
expect_eq "$(fill_of down.svg 'void gemm<float, 128>(float*)')" "rgb(110,110,255)" "shrunk kernel colour"
expect_status 0 "$X" --flamegraph --diff -o cpu.svg base.db slow1.db
expect_eq "$(fill_of cpu.svg aten::fresh)" "rgb(255,0,0)" "new op colour"
expect_eq "$(fill_of cpu.svg aten::stale)" "" "a gone op is not drawn (widths are the new run's)"
expect_status 2 "$X" --chrome --diff base.db new.db
expect_status 2 "$X" --stacks --diff base.db
expect_status 2 "$X" --stacks --diff-normalize base.db
expect_status 3 "$X" --flamegraph --diff -o bad.svg base.db text.db
expect_one_line_error
expect_no_file bad.svg
# the viewer runs on the differential SVG as on the plain one (when a browser is here)
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
if [ -n "$CHROMIUM" ] && command -v timeout >/dev/null; then
    prof=$(mktemp -d "$TMP/prof.XXXXXX")
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --disable-sync \
        --disable-background-networking --disable-component-update --user-data-dir="$prof" \
        --dump-dom "file://$TMP/up.svg?s=gemm" >dom.svg 2>/dev/null
    grep -q 'data-fg-ready="1"' dom.svg || fail "the viewer did not finish on the differential flamegraph"
    grep -q 'data-fg-error=' dom.svg && fail "viewer error: $(grep -o 'data-fg-error="[^"]*"' dom.svg)"
    grep -q 'data-share="88.89"' dom.svg || fail "search share on the differential flamegraph: $(grep -o 'data-share="[^"]*"' dom.svg)"
fi

# ---- folded-stack files as input (--folded) ----
# a run.db's stacks drawn from its folded text give the run.db's own graph: same total, same frames
expect_status 0 "$X" --stacks --metric self_gpu -o slow1.folded slow1.db
expect_status 0 "$X" --flamegraph --metric self_gpu -o fromdb.svg slow1.db
expect_status 0 "$X" --flamegraph --folded --metric self_gpu -o fromtext.svg slow1.folded
expect_grep 'data-fg-total="135000"' fromtext.svg
expect_eq "$(grep -c 'class="f"' fromtext.svg)" "$(grep -c 'class="f"' fromdb.svg)" "frames drawn from the folded text"
expect_eq "$(fill_of fromtext.svg 'void gemm<float, 128>(float*)' | cut -c1-4)" "rgb(" "a frame of the folded graph has a colour"
grep -q 'data-base=' fromtext.svg && fail "a plain folded graph carries base widths"
# repeated stacks merge, blank lines are skipped, the output is sorted with ';' first
printf 'main;b 2\n\nmain 1\nmain;a 5\nmain;b 3\n' > rep.folded
expect_eq "$("$X" --stacks --folded rep.folded | tr '\n' '|')" "main 1|main;a 5|main;b 5|" "merged folded lines"
expect_eq "$(printf 'x;y 7\n' | "$X" --stacks --folded - | tr '\n' '|')" "x;y 7|" "folded from standard input"
# two folded files are joined as difffolded.pl joins them: the same lines as --diff of the run.dbs
expect_status 0 "$X" --stacks -o base.folded base.db
expect_status 0 "$X" --stacks -o slowc.folded slow1.db
expect_status 0 "$X" --stacks --diff -o fromdbs.diff base.db slow1.db
expect_status 0 "$X" --stacks --folded --diff -o fromtext.diff base.folded slowc.folded
cmp -s fromdbs.diff fromtext.diff || fail "--folded --diff differs from --diff of the run.dbs"
expect_status 0 "$X" --flamegraph --folded --diff -o textdiff.svg base.folded slowc.folded
expect_eq "$(fill_of textdiff.svg aten::fresh)" "rgb(255,0,0)" "new op colour from folded files"
# bad folded input: one line naming the line, no output left behind
printf 'a;b 3\nno count here\n' > bad.folded
expect_status 3 "$X" --flamegraph --folded -o badf.svg bad.folded
expect_one_line_error
expect_grep "bad.folded:2:" "$TMP/err"
expect_no_file badf.svg
printf 'a;b 1.5\n' > frac.folded
expect_status 3 "$X" --flamegraph --folded -o badf.svg frac.folded
expect_grep "fraction" "$TMP/err"
printf 'a;b 99999999999999999999\n' > huge.folded
expect_status 3 "$X" --flamegraph --folded -o badf.svg huge.folded
# a two-column file (difffolded.pl's, or --stacks --diff's) is a differential file
expect_status 0 "$X" --flamegraph --folded -o twocol.svg fromdbs.diff
expect_eq "$(fill_of twocol.svg aten::fresh)" "rgb(255,0,0)" "new op colour from a two-column file"
expect_eq "$("$X" --stacks --folded fromdbs.diff | md5sum)" "$(md5sum < fromdbs.diff)" "two-column file read back"
printf 'a 5 7\nb 3\n' > mixed.folded
expect_status 3 "$X" --stacks --folded mixed.folded
expect_grep "mixed.folded:2: one count" "$TMP/err"
expect_status 3 "$X" --stacks --folded --diff fromdbs.diff base.folded
# repeats of a two-column stack sum both sides; indentation is not part of a frame
expect_eq "$(printf 'a;b 5 7\n  a;b 1 1\n' | "$X" --stacks --folded - | tr '\n' '|')" "a;b 6 8|" "two-column repeats"
expect_status 2 "$X" --stacks --folded --diff-normalize slow1.folded
expect_status 2 "$X" --chrome --folded slow1.folded
expect_status 2 "$X" --flamegraph --folded --device 0 slow1.folded
expect_status 2 "$X" --flamegraph --folded --diff slow1.folded
expect_status 3 "$X" --flamegraph --folded no-such.folded
