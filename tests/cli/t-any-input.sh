# Any input, any tool: trace-analyze and trace-export take a trace file where they take a
# run.db.  It is ingested once into $XDG_CACHE_HOME/tracekit, keyed by path, size, mtime
# and build; --no-cache uses a temporary file; never anything beside the input.

export XDG_CACHE_HOME="$TMP/cache" TMPDIR="$TMP/tmp"
mkdir -p in "$TMPDIR"
python3 - <<'PY'
import json
ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 11, "ts": 0, "dur": 400}]
for i in range(6):
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mul" if i % 2 else "aten::add", "pid": 1,
               "tid": 11, "ts": 10 + 50 * i, "dur": 20})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 11,
               "ts": 12 + 50 * i, "dur": 5, "args": {"correlation": i + 1}})
    ev.append({"ph": "X", "cat": "kernel", "name": "k%d" % (i % 3), "pid": 0, "tid": 7, "ts": 30 + 50 * i,
               "dur": 10 + i, "args": {"device": 0, "stream": 7, "correlation": i + 1}})
json.dump({"traceEvents": ev}, open("in/t.json", "w"))
PY
cache="$XDG_CACHE_HOME/tracekit"
entries() { find "$cache" -name '*.db' 2>/dev/null | wc -l; }
entry_state() { stat -c '%n %i %Y' "$cache"/*.db 2>/dev/null; }

expect_status 0 "$BIN/trace-ingest" -q -o ref.db in/t.json
expect_status 0 "$BIN/trace-analyze" ref.db
cp "$TMP/out" ref.txt
expect_status 0 "$BIN/trace-export" --stacks ref.db
cp "$TMP/out" ref.folded

# first call: ingested into one cache entry, the same table as from an explicit ingest
expect_status 0 "$BIN/trace-analyze" in/t.json
cmp -s ref.txt "$TMP/out" || fail "trace-analyze TRACE differs from trace-analyze run.db"
expect_eq "$(entries)" 1 "cache entries after the first call"
expect_eq "$(ls in)" t.json "files beside the input"
first=$(entry_state)

# second call: the entry is reused as it is
expect_status 0 "$BIN/trace-analyze" in/t.json
cmp -s ref.txt "$TMP/out" || fail "the cached table differs"
expect_eq "$(entry_state)" "$first" "the second call rewrote the cache entry"
# the same file by another name is the same input
expect_status 0 "$BIN/trace-analyze" ./in/../in/t.json
expect_eq "$(entry_state)" "$first" "another spelling of the path re-ingested"

# trace-export reads the same entry
expect_status 0 "$BIN/trace-export" --stacks in/t.json
cmp -s ref.folded "$TMP/out" || fail "trace-export TRACE differs from trace-export run.db"
expect_eq "$(entry_state)" "$first" "trace-export re-ingested"

# a changed input (a new mtime) is ingested again, and keeps one entry
touch -d '2001-01-01 00:00:00' in/t.json
expect_status 0 "$BIN/trace-analyze" in/t.json
cmp -s ref.txt "$TMP/out" || fail "table after touch"
expect_eq "$(entries)" 1 "cache entries after the input changed"
[ "$(entry_state)" != "$first" ] || fail "a touched input did not re-ingest"

# a corrupt entry is rebuilt
second=$(entry_state)
for f in "$cache"/*.db; do printf 'garbage' >"$f"; done
expect_status 0 "$BIN/trace-analyze" in/t.json
cmp -s ref.txt "$TMP/out" || fail "table after a corrupt cache entry"
expect_eq "$(entries)" 1 "cache entries after rebuilding"
expect_no_grep 'garbage' "$(ls "$cache"/*.db)"

# --no-cache: nothing in the cache, nothing left in $TMPDIR
rm -rf "$cache"
expect_status 0 "$BIN/trace-analyze" --no-cache in/t.json
cmp -s ref.txt "$TMP/out" || fail "--no-cache table"
expect_eq "$(entries)" 0 "cache entries after --no-cache"
expect_eq "$(ls -A "$TMPDIR")" "" "temporary files left after --no-cache"
expect_status 0 "$BIN/trace-export" --no-cache --stacks in/t.json
cmp -s ref.folded "$TMP/out" || fail "trace-export --no-cache"
expect_eq "$(ls -A "$TMPDIR")" "" "temporary files left after trace-export --no-cache"

# a read-only input directory, and a cache that cannot be made (a file in its place)
chmod 555 in
expect_status 0 "$BIN/trace-analyze" in/t.json
cmp -s ref.txt "$TMP/out" || fail "read-only input directory"
expect_eq "$(ls in)" t.json "files beside a read-only input"
: >notadir
XDG_CACHE_HOME="$TMP/notadir" expect_status 0 "$BIN/trace-analyze" in/t.json
cmp -s ref.txt "$TMP/out" || fail "no usable cache directory"
expect_eq "$(ls -A "$TMPDIR")" "" "temporary files left without a cache directory"
chmod 755 in

# standard input, and several inputs mixing run.dbs and traces
expect_status 0 "$BIN/trace-analyze" - <in/t.json
cmp -s ref.txt "$TMP/out" || fail "trace-analyze - (standard input)"
expect_status 0 "$BIN/trace-analyze" ref.db in/t.json
cp "$TMP/out" mixed.txt
expect_status 0 "$BIN/trace-analyze" ref.db ref.db
cmp -s mixed.txt "$TMP/out" || fail "a run.db and a trace differ from the run.db twice"
expect_status 0 "$BIN/trace-export" --diff --stacks ref.db in/t.json
expect_grep '^ProfilerStep#1;aten::add 45000 45000$' "$TMP/out"

# an nvprof database through trace-export --flamegraph, as the docs promise
root=$(cd "$(dirname "$BIN")/../.." 2>/dev/null && pwd)
sample=""
for s in "$root/sample-traces/lm-step.nvvp" "$(pwd)/../sample-traces/lm-step.nvvp"; do [ -f "$s" ] && sample=$s; done
if [ -n "$sample" ]; then
    expect_status 0 "$BIN/trace-ingest" -q -o lm.db "$sample"
    expect_status 0 "$BIN/trace-export" --flamegraph -o ref.svg lm.db
    expect_status 0 "$BIN/trace-export" --flamegraph -o via-cache.svg "$sample"
    cmp -s ref.svg via-cache.svg || fail "flamegraph of the .nvvp differs from that of its run.db"
fi

# neither a run.db nor a trace: one line, exit 3, the formats tried; a run.db's own errors as before
rm -rf "$cache"
printf 'hello' >in2.txt
expect_status 3 "$BIN/trace-analyze" in2.txt
expect_one_line_error
expect_grep 'unrecognised input format' "$TMP/err"
expect_status 3 "$BIN/trace-analyze" missing.db
expect_one_line_error
expect_eq "$(entries)" 0 "cache entries for inputs that are not traces"
