# --compat torch computes PyTorch's numbers by event slot: an array over the ids
# where they are dense, a map where they are not.  Renumbering the events (sparse
# ids, ids past 2^40) keeps the order of everything, so every output must stay the
# same, memory columns included, and so must the rows read through SQLite.
# (Ids stay positive: PyTorch's tree has no parent below 0.)
command -v sqlite3 >/dev/null || { skip "sqlite3 not installed"; return 0; }
trace="$GOLDEN_DIR/../../oracle/real/golden/deep/trace_kineto.json"
expect_status 0 "$BIN/trace-ingest" -q -o d.db "$trace"
mem=$(q d.db "SELECT count(*) FROM events WHERE kind = (SELECT id FROM kinds WHERE name = 'memory')")
[ "$mem" -gt 100 ] || fail "the workload should carry memory events (got $mem)"
cp d.db sparse.db
q sparse.db "UPDATE events SET id = id * 100003 + 5, parent_id = parent_id * 100003 + 5"
cp d.db offset.db
q offset.db "UPDATE events SET id = id + 1099511627776, parent_id = parent_id + 1099511627776"
[ "$(q sparse.db 'SELECT max(id) - min(id) > 1000 * count(*) FROM events')" = 1 ] || fail "ids not sparse"
outputs() {   # DB PREFIX [ENV]: every --compat torch output of DB into PREFIX.*
    env ${3:-} "$BIN/trace-analyze" --compat torch --sort none -n -1 --format csv "$1" >"$2.csv" 2>&1
    env ${3:-} "$BIN/trace-analyze" --compat torch --group-by-stack 3 -n -1 "$1" >"$2.stack" 2>&1
    env ${3:-} "$BIN/trace-analyze" --compat torch --top-level -n -1 "$1" >"$2.top" 2>&1
    env ${3:-} "$BIN/trace-export" --stacks --compat torch -o "$2.folded" "$1" >/dev/null 2>&1
}
outputs d.db dense
# the memory columns are PyTorch's: some event holds memory, some has negative self memory
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[h[i] = $i] = i; next }
         $h["cpu_mem_bytes"] != 0 { m = 1 } $h["self_cpu_mem_bytes"] < 0 { n = 1 }
         END { exit !(m && n) }' dense.csv || fail "no memory numbers in the dense table"
[ -s dense.folded ] || fail "no stacks written"
for v in sparse offset; do
    outputs "$v.db" "$v"
    outputs "$v.db" "$v.sql" TR_NO_PAGE_READ=1
    for f in csv stack top folded; do
        cmp -s "dense.$f" "$v.$f" || fail "$v ids: --compat torch $f differs"
        cmp -s "dense.$f" "$v.sql.$f" || fail "$v ids, rows through SQLite: --compat torch $f differs"
    done
done
