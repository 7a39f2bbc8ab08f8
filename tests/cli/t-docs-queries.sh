# Every ```sql block in docs/*.md runs, as written, against a run.db ingested from the
# bundled sample: the examples people copy must work (and the views they use exist).

root=$(cd "$GOLDEN_DIR/../../.." && pwd)
expect_status 0 "$BIN/trace-ingest" -q -o run.db "$root/sample-traces/lm-step.nvvp"
# one file per block, named after its document and its place there
for doc in "$root"/docs/*.md; do
    awk -v base="q-$(basename "$doc" .md)" '
        /^```sql[ \t]*$/ { n++; f = sprintf("%s-%02d.sql", base, n); inblk = 1; next }
        inblk && /^```/ { inblk = 0; close(f); next }
        inblk { print > f }' "$doc"
done
nq=0
for f in q-*.sql; do
    [ -e "$f" ] || break
    nq=$((nq + 1))
    sqlite3 -batch -bail run.db <"$f" >"$f.out" 2>"$f.err" || fail "$f fails: $(head -c 300 "$f.err")"
    [ -s "$f.err" ] && fail "$f: $(head -c 300 "$f.err")"
done
[ "$nq" -ge 5 ] || fail "only $nq sql blocks found in docs/*.md"

# the views answer as the tables do
expect_eq "$(q run.db "SELECT count(*) FROM kernel_launches")" "$(q run.db "SELECT count(*) FROM events WHERE kind = 7")" \
    "kernel_launches: one row per kernel"
expect_eq "$(q run.db "SELECT count(*) FROM kernel_launches WHERE op IS NULL OR launch_id IS NULL")" "0" \
    "every sample kernel has its launch and op"
expect_eq "$(q run.db "SELECT sum(dur_ns) FROM kernel_launches")" \
    "$(q run.db "SELECT sum(end_ns - start_ns) FROM events WHERE kind = 7")" "kernel_launches: durations"
expect_eq "$(q run.db "SELECT count(*), sum(cpu_self_ns) FROM ops")" \
    "$(q run.db "SELECT count(*), sum(cpu_self_ns) FROM events WHERE kind IN (1, 2) AND flags & 32 = 0")" "ops"
expect_eq "$(q run.db "SELECT count(*) FROM steps")" "0" "the sample has no steps"
# the tools still open a run.db with views (they are never read)
expect_status 0 "$BIN/trace-analyze" -n 1 run.db
expect_status 0 "$BIN/trace-export" --stacks -o x.folded run.db
