# Oracle: for event sets free of PyTorch's defects, trace-analyze's table is
# byte-identical to PyTorch 1.13's key_averages().table() on the same events.
# The goldens in tests/oracle/golden were written by tests/oracle/oracle.py
# under Debian's python3-torch 1.13 (see that script); this test needs only python3.
oracle="$GOLDEN_DIR/../../oracle"
command -v python3 >/dev/null || { skip "python3 not installed"; return 0; }
python3 "$oracle/oracle.py" list > cases.txt || { fail "oracle.py list"; return 0; }
[ -s cases.txt ] || fail "no oracle cases"
while read -r case variant args; do
    [ -f "$case.db" ] || {
        python3 "$oracle/oracle.py" nvprof "$case" "$case.nvvp" || fail "oracle.py nvprof $case"
        "$BIN/trace-ingest" -q -o "$case.db" "$case.nvvp" || fail "ingest $case"
    }
    # shellcheck disable=SC2086
    "$BIN/trace-analyze" $args "$case.db" > "$case.$variant.txt" 2>/dev/null
    cmp -s "$oracle/golden/$case.$variant.txt" "$case.$variant.txt" || {
        fail "$case.$variant differs from PyTorch 1.13"
        diff "$oracle/golden/$case.$variant.txt" "$case.$variant.txt" | head -10 >&2
    }
done < cases.txt
