# Hostile names (quotes, backslashes, <script>, ';', newlines, control and invalid UTF-8
# bytes) give valid folded, SVG and JSON output; errors and exit codes.
db="$TMP/h.db"
"$BIN/trace-ingest" -q -o "$db" "$root/sample-traces/lm-step.nvvp" \
    || { fail "cannot ingest the bundled sample"; return 0; }
hostile="'say \"hi\"\\ <script>alert(1)</script> a;b' || char(10) || 'line2' || char(1) || CAST(x'ff41' AS TEXT) || '&amp;'"
q "$db" "UPDATE strings SET value = $hostile WHERE id IN (SELECT name_id FROM events WHERE kind = 7 LIMIT 1)"
q "$db" "UPDATE strings SET value = '<script>alert(1)</script>' WHERE id IN (SELECT name_id FROM events WHERE kind IN (1, 2) LIMIT 1)"
q "$db" "UPDATE strings SET value = '' WHERE id IN (SELECT name_id FROM events WHERE kind = 4 ORDER BY id LIMIT 1)"
expect_status 0 "$BIN/trace-export" --chrome -o "$TMP/h.json" "$db"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert any("<script>" in e["name"] for e in d["traceEvents"])' "$TMP/h.json" \
    || fail "hostile names: invalid chrome JSON"
for metric in self_cpu self_gpu; do
    expect_status 0 "$BIN/trace-export" --flamegraph --metric $metric -o "$TMP/h.svg" "$db"
    python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' "$TMP/h.svg" || fail "hostile names: invalid SVG"
    grep -q '<script>alert' "$TMP/h.svg" && fail "unescaped <script> in the SVG"
    expect_status 0 "$BIN/trace-export" --stacks --metric $metric -o "$TMP/h.folded" "$db"
    bad=$(grep -cv '^[^;].* [0-9][0-9]*$' "$TMP/h.folded")
    expect_eq "$bad" 0 "hostile names: malformed folded lines ($metric)"
    iconv -f UTF-8 -t UTF-8 "$TMP/h.folded" >/dev/null 2>&1 || fail "folded output is not UTF-8"
done
grep -q 'a_b line2' "$TMP/h.folded" || fail "';' and newline in a name not replaced"
# errors: one line on stderr, documented exit codes, no output file left behind
expect_status 2 "$BIN/trace-export" --stacks --metric bogus "$db"
expect_one_line_error; expect_grep 'self_cpu' "$TMP/err"
expect_status 2 "$BIN/trace-export" --stacks --include 'a(b' "$db"
expect_one_line_error; expect_grep 'offset' "$TMP/err"
expect_status 2 "$BIN/trace-export" "$db"
expect_status 2 "$BIN/trace-export" --stacks --bogus "$db"
expect_status 2 "$BIN/trace-export" --stacks --time-range x:y "$db"
echo "not a database" >"$TMP/bad.db"
expect_status 3 "$BIN/trace-export" --stacks -o "$TMP/out.folded" "$TMP/bad.db"
expect_one_line_error; expect_no_file "$TMP/out.folded"
cp "$db" "$TMP/new.db"; q "$TMP/new.db" "PRAGMA user_version = 99"
expect_status 3 "$BIN/trace-export" --chrome "$TMP/new.db"
expect_one_line_error
# filters: --include keeps stacks through a matching frame, --exclude drops them
"$BIN/trace-export" --stacks --include 'LaunchKernel' "$db" >"$TMP/i"
[ -s "$TMP/i" ] || fail "--include matched nothing"
grep -v 'LaunchKernel' "$TMP/i" | grep -q . && fail "--include kept a stack without a match"
"$BIN/trace-export" --stacks --exclude 'LaunchKernel' "$db" | grep -q 'LaunchKernel' && fail "--exclude kept a match"
true
