# Every ```sql block in docs/*.md runs, as written, against a run.db ingested from the
# bundled sample: the examples people copy must work (and the views they use exist).
# So does every SQL string in a ```python block of docs/python.md, and every such block
# whose modules are installed, with the tools first on PATH.  A block for another engine
# (Trino, Spark) says so on the line before its fence: <!-- not run.db -->.

root=$(cd "$GOLDEN_DIR/../../.." && pwd)
expect_status 0 "$BIN/trace-ingest" -q -o run.db "$root/sample-traces/lm-step.nvvp"
# one file per block, named after its document and its place there
for doc in "$root"/docs/*.md; do
    awk -v base="$(basename "$doc" .md)" -v py="$( [ "${doc##*/}" = python.md ] && echo 1)" '
        /^```(sql|python)[ \t]*$/ && (prev ~ /^<!-- not run\.db/ || ($0 ~ /python/ && !py)) { skip = 1; next }
        skip && /^```/ { skip = 0; next }
        skip { next }
        { prev = $0 }
        /^```(sql|python)[ \t]*$/ { n++; lang = substr($0, 4); sub(/[ \t]*$/, "", lang)
            f = sprintf("%s-%s-%02d.%s", lang == "sql" ? "q" : "py", base, n, lang == "sql" ? "sql" : "py")
            inblk = 1; next }
        inblk && /^```/ { inblk = 0; close(f); next }
        inblk { print > f }' "$doc"
done
# the SQL strings of the python blocks (what they pass to read_sql or execute)
for f in py-*.py; do
    [ -e "$f" ] || break
    python3 - "$f" <<'PY' || fail "$f does not parse as Python"
import ast, re, sys
tree = ast.parse(open(sys.argv[1]).read())
n = 0
for node in ast.walk(tree):
    if isinstance(node, ast.Constant) and isinstance(node.value, str) \
            and re.match(r"\s*(SELECT|WITH)\b", node.value, re.I):
        n += 1
        open("q-%s-%02d.sql" % (sys.argv[1][3:-3], n), "w").write(node.value.strip() + ";\n")
PY
done
nq=0
for f in q-*.sql; do
    [ -e "$f" ] || break
    nq=$((nq + 1))
    sqlite3 -batch -bail run.db <"$f" >"$f.out" 2>"$f.err" || fail "$f fails: $(head -c 300 "$f.err")"
    [ -s "$f.err" ] && fail "$f: $(head -c 300 "$f.err")"
done
[ "$nq" -ge 10 ] || fail "only $nq sql blocks found in docs/*.md"
ls q-python-*.sql >/dev/null 2>&1 || fail "no SQL found in the python blocks of docs/python.md"

# the python blocks, where their modules are installed
"$BIN/trace-export" --help | grep -q -- '--html' || html=no
npy=0
for f in py-*.py; do
    [ -e "$f" ] || break
    mods=$(sed -n 's/^import \(.*\)/\1/p; s/^from \([a-zA-Z_.]*\) import.*/\1/p' "$f" |
           sed 's/ as [a-zA-Z_]*//g' | tr ',\n' '  ')
    missing=
    for m in $mods; do python3 -c "import $m" 2>/dev/null || missing="$missing $m"; done
    [ -n "$missing" ] && { echo "    note: $f not run (no$missing)"; continue; }
    [ "${html:-}" = no ] && grep -q -- '--html' "$f" && { echo "    note: $f not run (no trace-export --html)"; continue; }
    npy=$((npy + 1))
    PATH="$BIN:$PATH" python3 "$f" >"$f.out" 2>"$f.err" || fail "$f fails: $(tail -3 "$f.err")"
done
echo "    $nq SQL queries, $npy Python blocks run"

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
