# Real PyTorch 1.13 CPU workloads (tests/oracle/real/golden/*, written by
# tests/oracle/real/gen.py under Debian's python3-torch): the raw profiler events of each
# workload, re-encoded as a Kineto trace, must give PyTorch's own tables and stacks
# byte for byte under --compat torch, and the same numbers in the default mode except
# for the differences listed in tests/oracle/real/differences.tsv.
# Needs only python3 (for compare.py and the legacy trace's event count). When the
# numbers differ, `tests/oracle/real/explain.py golden/W W.db` lists the events behind it.
real="$GOLDEN_DIR/../../oracle/real"
command -v python3 >/dev/null || { skip "python3 not installed"; return 0; }
[ -d "$real/golden" ] || { fail "no goldens in $real/golden"; return 0; }
command -v sqlite3 >/dev/null || skip "sqlite3 not installed: trace_legacy.json event counts not checked"

# same NAME GOLDEN CMD...: CMD's standard output must equal GOLDEN, but for the one
# difference --compat torch keeps (docs/semantics.md): a name's control characters are
# shown as their one-column pictures (the names workload's tab)
same() {
    name=$1 want=$2
    if LC_ALL=C grep -q '[[:cntrl:]]' "$2"; then
        want=$w.$name.want
        python3 -c 'import sys
t = open(sys.argv[1], encoding="utf-8", newline="").read()
pic = lambda c: chr(0x2400 + ord(c)) if ord(c) < 32 and c != "\n" else "\u2421" if c == "\x7f" else c
sys.stdout.write("".join(pic(c) for c in t))' "$2" >"$want" || {
            fail "$w: $name: cannot read $2"
            return
        }
    fi
    shift 2
    "$@" >"$w.$name" 2>"$w.$name.err" || {
        fail "$w: $name: exit $? ($(head -c 200 "$w.$name.err"))"
        return
    }
    cmp -s "$want" "$w.$name" || {
        fail "$w: $name differs from PyTorch 1.13"
        diff "$want" "$w.$name" | head -8 >&2
    }
}

n=0
for dir in "$real"/golden/*/; do
    w=$(basename "$dir")
    [ -f "$dir/trace_kineto.json" ] || continue
    n=$((n + 1))
    "$BIN/trace-ingest" -q -o "$w.db" "$dir/trace_kineto.json" || {
        fail "$w: trace-ingest trace_kineto.json"
        continue
    }
    # (a) byte-identical with PyTorch's key_averages().table() and export_stacks()
    same default.txt "$dir/table_default.txt" \
        "$BIN/trace-analyze" --compat torch --sort self_cpu_time_total -n -1 "$w.db"
    same unsorted.txt "$dir/table_unsorted.txt" \
        "$BIN/trace-analyze" --compat torch --sort none -n -1 "$w.db"
    same shapes.txt "$dir/table_shapes.txt" \
        "$BIN/trace-analyze" --compat torch --group-by-shape --sort self_cpu_time_total -n -1 "$w.db"
    same stack5.txt "$dir/table_stack5.txt" \
        "$BIN/trace-analyze" --compat torch --group-by-stack 5 --sort self_cpu_time_total -n -1 "$w.db"
    [ ! -f "$dir/table_top.txt" ] || same top.txt "$dir/table_top.txt" \
        "$BIN/trace-analyze" --compat torch --top-level --sort self_cpu_time_total -n -1 "$w.db"
    if [ ! -f "$dir/stacks_self_cpu.txt" ]; then
        # profiled without stacks: PyTorch's export_stacks() refuses; we write an empty
        # file and say why
        "$BIN/trace-export" --stacks --compat torch -o "$w.stacks.txt" "$w.db" 2>"$w.stacks.err" \
            && [ ! -s "$w.stacks.txt" ] && grep -q 'with_stack=True' "$w.stacks.err" \
            || fail "$w: export --stacks --compat torch of a profile without frames"
    elif "$BIN/trace-export" --stacks --compat torch --metric self_cpu_time_total \
        -o "$w.stacks.txt" "$w.db" 2>"$w.stacks.err"; then
        cmp -s "$dir/stacks_self_cpu.txt" "$w.stacks.txt" || {
            fail "$w: export --stacks --compat torch differs from PyTorch 1.13"
            diff "$dir/stacks_self_cpu.txt" "$w.stacks.txt" | head -8 >&2
        }
    else
        fail "$w: trace-export --stacks --compat torch: $(head -c 200 "$w.stacks.err")"
    fi

    # (b) the default mode's numbers, row by row, at PyTorch's printed precision
    if "$BIN/trace-analyze" --format csv -n -1 --sort self_cpu_time_total "$w.db" \
        >"$w.csv" 2>"$w.csv.err"; then
        python3 "$real/compare.py" "$dir/table_default.txt" "$w.csv" \
            --allow "$real/differences.tsv" >"$w.cmp" 2>"$w.cmp.err"
        case $? in
            0) ;;
            1) fail "$w: numbers differ from PyTorch 1.13 ($(cat "$w.cmp.err"))"
               grep -v '	allowed: ' "$w.cmp" | head -8 >&2 ;;
            *) fail "$w: compare.py: $(head -c 300 "$w.cmp.err")" ;;
        esac
    else
        fail "$w: trace-analyze --format csv: $(head -c 200 "$w.csv.err")"
    fi

    # compare.py itself: PyTorch's own rows match its tables, and a missing row is caught
    for v in default shapes stack5; do
        python3 "$real/compare.py" "$dir/table_$v.txt" "$dir/rows_$v.csv" >"$w.self.$v" 2>&1 || {
            fail "$w: compare.py finds differences between table_$v.txt and rows_$v.csv"
            head -5 "$w.self.$v" >&2
        }
    done
    sed 2d "$dir/rows_default.csv" >"$w.rows-1.csv"
    python3 "$real/compare.py" "$dir/table_default.txt" "$w.rows-1.csv" >/dev/null 2>&1
    expect_eq "$?" 1 "$w: compare.py's status for a missing row"

    # (a') a real Kineto trace writes no "Scope": backward functions are found by their
    # forward thread and autograd's own node names, with the same stacks
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for e in d["traceEvents"]:
    e.get("args", {}).pop("Scope", None)
json.dump(d, open(sys.argv[2], "w"))' "$dir/trace_kineto.json" "$w.noscope.json" \
        && "$BIN/trace-ingest" -q -o "$w.noscope.db" "$w.noscope.json" \
        && same stack5-noscope.txt "$dir/table_stack5.txt" \
            "$BIN/trace-analyze" --compat torch --group-by-stack 5 --sort self_cpu_time_total -n -1 \
            "$w.noscope.db" \
        || fail "$w: the trace without Scope args"

    # (c) PyTorch's own chrome export (a bare array, no categories) ingests every op; but
    # it writes names unescaped (SEMANTICS.md, defect 10), so a name with a quote makes
    # it JSON no reader takes (the names workload's 'say "hi"'): a bad input, exit 3
    if command -v sqlite3 >/dev/null; then
        want=$(python3 -c 'import json, sys
try:
    print(sum(1 for e in json.load(open(sys.argv[1])) if e.get("ph") == "X"))
except ValueError:
    print("invalid")' "$dir/trace_legacy.json")
        if [ "$want" = invalid ]; then
            expect_status 3 "$BIN/trace-ingest" -q -o "$w.legacy.db" "$dir/trace_legacy.json"
        elif "$BIN/trace-ingest" -q -o "$w.legacy.db" "$dir/trace_legacy.json" 2>"$w.legacy.err"; then
            got=$(q "$w.legacy.db" 'SELECT count(*) FROM events')
            expect_eq "$got" "$want" "$w: events ingested from trace_legacy.json"
        else
            fail "$w: trace-ingest trace_legacy.json: $(head -c 200 "$w.legacy.err")"
        fi
    fi
done
[ "$n" -ge 25 ] || fail "expected at least 25 workloads in $real/golden, found $n"
