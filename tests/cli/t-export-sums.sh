# trace-export --stacks: for every metric, the folded values add up to the analyze totals
# (sums over run.db's events) on the shared nvprof traces; one line per distinct stack.
need_traces || return 0
for trace in "$TRACES"/nvprof/*; do
    name=$(basename "$trace")
    db="$TMP/${name%.*}.db"
    "$BIN/trace-ingest" -q -o "$db" "$trace" || { fail "ingest $name"; continue; }
    for row in "self_cpu:e.cpu_self_ns" "self_gpu:CASE WHEN k.on_gpu THEN e.gpu_self_ns ELSE 0 END" \
               "cpu_total:e.cpu_total_ns" "gpu_total:e.gpu_total_ns" "count:1" \
               "self_cpu_mem:e.cpu_mem_self" "self_gpu_mem:e.gpu_mem_self"; do
        metric=${row%%:*} expr=${row#*:}
        "$BIN/trace-export" --stacks --metric "$metric" -o "$TMP/f" "$db" || { fail "$name $metric: exit $?"; continue; }
        got=$(awk '{s += $NF} END {printf "%.0f", s}' "$TMP/f")
        want=$(q "$db" "SELECT coalesce(sum($expr), 0) FROM events e JOIN kinds k ON k.id = e.kind")
        expect_eq "$got" "$want" "$name --metric $metric: folded sum"
        # distinct stacks, sorted, every line parses as 'stack INTEGER'
        dups=$(sed 's/ -\{0,1\}[0-9]*$//' "$TMP/f" | uniq -d | wc -l)
        expect_eq "$dups" 0 "$name $metric: duplicate stacks"
        LC_ALL=C sort -c "$TMP/f" 2>/dev/null || sed 's/ -\{0,1\}[0-9]*$//' "$TMP/f" | LC_ALL=C sort -c 2>/dev/null \
            || fail "$name $metric: lines not sorted"
        bad=$(grep -cv '^[^;].* -\{0,1\}[0-9][0-9]*$' "$TMP/f")
        expect_eq "$bad" 0 "$name $metric: malformed folded lines"
    done
    # the self_gpu total is the analyze table's "Self CUDA time total" and, when every
    # activity has a launching call, the GPU time attributed to CPU events
    orphans=$(q "$db" "SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.on_gpu AND e.parent_id IS NULL")
    cpu_side=$(q "$db" "SELECT coalesce(sum(e.gpu_self_ns),0) FROM events e JOIN kinds k ON k.id = e.kind WHERE NOT k.on_gpu")
    if [ "$orphans" = 0 ] && [ "$cpu_side" != 0 ]; then
        "$BIN/trace-export" --stacks --metric self_gpu "$db" >"$TMP/g"
        expect_eq "$(awk '{s += $NF} END {printf "%.0f", s}' "$TMP/g")" "$cpu_side" "$name: GPU time vs CPU-side attribution"
    fi
done
# determinism: same bytes twice
db="$TMP/profiling-lm__net-17ed9e2.db"
for fmt in --stacks --flamegraph --chrome; do
    "$BIN/trace-export" $fmt -o "$TMP/a" "$db" && "$BIN/trace-export" $fmt -o "$TMP/b" "$db"
    cmp -s "$TMP/a" "$TMP/b" || fail "$fmt output differs between two runs"
done
# GPU activities hang under their launching API call in tree stacks
"$BIN/trace-export" --stacks --metric self_gpu "$db" >"$TMP/g"
expect_grep 'cudaLaunchKernel;volta_sgemm' "$TMP/g"
# a kernel-only trace: the flamegraph shows GPU time by default and says why
"$BIN/trace-export" --flamegraph -o "$TMP/k.svg" "$TMP/parallel-point-cloud-processing__prof.db" \
    || fail "flamegraph of a GPU-only trace"
expect_grep 'the trace has no CPU time' "$TMP/k.svg"
