# Names in the text table: --name-width, the terminal's width on a TTY, 55 columns
# otherwise (PyTorch's layout), and --short-names: C++ names shortened and distinct,
# full in csv and json.

python3 - <<'PY'
import json
ev = []
def launch(ts, corr, name, dur):
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 11, "ts": ts,
               "dur": 2, "args": {"correlation": corr}})
    ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts + 5, "dur": dur,
               "args": {"device": 0, "stream": 7, "correlation": corr}})
impl = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::%s "
        ">(at::TensorIteratorBase&, at::native::%s const&)::{lambda(int)#1}>(int, at::native::"
        "gpu_kernel_impl_nocast<at::native::%s >(at::TensorIteratorBase&, at::native::%s const&)::{lambda(int)#1})")
names = [impl % ((f,) * 4) for f in ("CUDAFunctor_add<c10::BFloat16>", "CUDAFunctor_add<float>",
                                     "BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >")]
# two names alike in their first 80 and last 40 characters: only numbering tells them apart when cut
names += ["void ns::k<ns::" + "A" * 80 + x + "Z" * 40 + ">(int)" for x in ("1", "2")]
names += ["void at::native::f<float>(int)", "void at::native::f<float>(long)"]   # overloads
for i, n in enumerate(names):
    launch(10 + 20 * i, i + 1, n, 10 + i)
json.dump({"traceEvents": ev}, open("n.json", "w"))
json.dump(names, open("names.json", "w"))
PY
expect_status 0 "$BIN/trace-ingest" -q -o n.db n.json

# shown names: the first column of the rows between the 2nd and 3rd separators
shown_names() {
    python3 -c '
import sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
seps = [i for i, l in enumerate(lines) if l.startswith("---")]
w = len(lines[seps[0]].split("  ")[0])
for r in lines[seps[1] + 1:seps[2]]:
    print(r[:w].strip())' "$1"
}
distinct() { [ "$(sort "$1" | uniq -d | wc -l)" = 0 ]; }
widest() { python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$1"; }

# not a terminal: PyTorch's 55 columns, names cut at 52 characters plus "..."
expect_status 0 "$BIN/trace-analyze" n.db
shown_names "$TMP/out" >shown
expect_eq "$(widest shown)" 55 "widest name when not a terminal"
distinct shown && fail "the long names should read alike when cut at 55 columns (test premise)"
expect_eq "$(cat "$TMP/err")" "" "stderr when not a terminal"
expect_status 0 "$BIN/trace-analyze" --name-width 55 n.db
cp "$TMP/out" w55
expect_status 0 "$BIN/trace-analyze" n.db
cmp -s w55 "$TMP/out" || fail "--name-width 55 differs from the default when not a terminal"

expect_status 0 "$BIN/trace-analyze" --name-width 30 n.db
shown_names "$TMP/out" >shown
expect_eq "$(widest shown)" 30 "--name-width 30"
expect_grep '^void at::native::elementwis\.\.\. ' "$TMP/out"
expect_status 2 "$BIN/trace-analyze" --name-width 3 n.db
expect_status 2 "$BIN/trace-analyze" --name-width x n.db

# --short-names: shortened, every row's name distinct, within the width
expect_status 0 "$BIN/trace-analyze" --short-names n.db
shown_names "$TMP/out" >shown
distinct shown || fail "--short-names: names alike: $(sort shown | uniq -d | head -3)"
expect_grep '~2 ' "$TMP/out"
expect_no_grep 'void ns::' "$TMP/out"
[ "$(widest shown)" -le 55 ] || fail "--short-names: a name over 55 columns"
expect_status 0 "$BIN/trace-analyze" --short-names --name-width 200 n.db
expect_grep '^ *at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<CUDAFunctor_add<float>>> ' "$TMP/out"
expect_grep '^ *at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<BinaryFunctor<float, float, float, …>>> ' "$TMP/out"
expect_grep '^ *void at::native::f<float>(int) ' "$TMP/out"    # overloads: only the full names differ
expect_grep '^ *ns::k<A*1Z*> ' "$TMP/out"
expect_status 0 "$BIN/trace-analyze" --short-names --name-width 40 n.db
shown_names "$TMP/out" >shown
distinct shown || fail "--short-names --name-width 40: names alike: $(sort shown | uniq -d | head -3)"
expect_status 0 "$BIN/trace-analyze" --short-names --format markdown n.db
grep -qF '| at::native::elementwise\_kernel\<128, 4, gpu\_kernel\_impl\_nocast\<CUDAFunctor\_add\<BFloat16>>> |' "$TMP/out" \
    || fail "markdown: short names, not cut"

# the full names in csv and json, whatever the options
expect_status 0 "$BIN/trace-analyze" --short-names --name-width 20 --format json n.db
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
want = set(json.load(open("names.json")))
got = {r["name"] for r in rows if r["device"] == "gpu"}
sys.exit(0 if got == want else 1)' "$TMP/out" || fail "json does not carry the full names"
expect_status 0 "$BIN/trace-analyze" --short-names --format csv n.db
expect_grep '"void at::native::f<float>(long)"\|void at::native::f<float>(long)' "$TMP/out"

# a terminal: the room the other columns leave (COLUMNS where the terminal has no size)
if command -v script >/dev/null 2>&1; then
    COLUMNS=400 script -qec "$BIN/trace-analyze n.db" /dev/null </dev/null >tty.out 2>&1
    tr -d '\r' <tty.out >tty.txt
    w=$(awk 'NR == 1 { print length($0) }' tty.txt)
    [ "$w" -gt 200 ] && [ "$w" -le 400 ] || fail "on a 400-column terminal the table is $w wide"
    shown_names tty.txt >shown
    distinct shown || fail "on a wide terminal the names are cut alike"
    COLUMNS=100 script -qec "$BIN/trace-analyze n.db" /dev/null </dev/null >tty.out 2>&1
    tr -d '\r' <tty.out >tty.txt
    shown_names tty.txt >shown
    expect_eq "$(widest shown)" 55 "a narrow terminal keeps 55 columns"
    # names that read alike once cut get a hint, on a terminal only
    grep -q 'some names read alike once cut: --short-names tells them apart' tty.txt \
        || fail "no --short-names hint on a terminal"
    COLUMNS=100 script -qec "$BIN/trace-analyze --short-names n.db" /dev/null </dev/null >tty.out 2>&1
    grep -q 'tells them apart' tty.out && fail "a --short-names hint with --short-names"
else
    echo "    note: no script(1): the terminal width is not tested"
fi

# the shared traces: every shown name distinct with --short-names
if [ -n "$TRACES" ] && [ -f "$TRACES/kineto/TraceLens__h100_Qwen1.5-0.5B-Chat.json.gz" ]; then
    expect_status 0 "$BIN/trace-ingest" -q -o qwen.db "$TRACES/kineto/TraceLens__h100_Qwen1.5-0.5B-Chat.json.gz"
    expect_status 0 "$BIN/trace-analyze" -n -1 qwen.db
    shown_names "$TMP/out" >shown
    [ "$(grep -c '^void at::native::elementwise_kernel<128, 4, at::nati\.\.\.$' shown)" -ge 4 ] \
        || fail "Qwen: expected alike elementwise_kernel rows without --short-names"
    expect_status 0 "$BIN/trace-analyze" -n -1 --short-names qwen.db
    shown_names "$TMP/out" >shown
    distinct shown || fail "Qwen --short-names: names alike: $(sort shown | uniq -d | head -3)"
    expect_grep '^ *at::native::elementwise_kernel<128, 2, …> ' "$TMP/out"
fi
