# Recorded frames (stack_nodes): --stack-source frames is the default when events use them,
# sums still match, and --compat torch writes PyTorch 1.13's export_stacks lines.
db="$TMP/f.db"
"$BIN/trace-ingest" -q -o "$db" "$root/sample-traces/lm-step.nvvp" || { fail "ingest sample"; return 0; }
q "$db" "INSERT INTO strings(id, value) SELECT max(id) + 1, 'train.py(90): <module>' FROM strings;
         INSERT INTO strings(id, value) SELECT max(id) + 1, 'train.py(40): forward' FROM strings;
         INSERT INTO stack_nodes(id, parent_id, frame_id) SELECT 1, NULL, id FROM strings WHERE value = 'train.py(90): <module>';
         INSERT INTO stack_nodes(id, parent_id, frame_id) SELECT 2, 1, id FROM strings WHERE value = 'train.py(40): forward';
         UPDATE events SET stack_id = 2 WHERE kind = 2;"
"$BIN/trace-export" --stacks -o "$TMP/fr" "$db" || fail "frames export"
expect_grep '^train.py(90): <module>;train.py(40): forward;aten::' "$TMP/fr"
expect_grep '^train.py(90): <module>;train.py(40): forward;aten::[^;]*;cudaLaunchKernel ' "$TMP/fr"
"$BIN/trace-export" --stacks --stack-source tree -o "$TMP/tr" "$db"
grep -q 'train.py' "$TMP/tr" && fail "--stack-source tree used frames"
for metric in self_cpu self_gpu count; do
    a=$("$BIN/trace-export" --stacks --metric $metric "$db" | awk '{s += $NF} END {printf "%.0f", s}')
    b=$("$BIN/trace-export" --stacks --metric $metric --stack-source tree "$db" | awk '{s += $NF} END {printf "%.0f", s}')
    expect_eq "$a" "$b" "$metric: frames and tree sums"
done
# --compat torch: one line per op with >= 1 us of self CPU, frames only, values in whole us
"$BIN/trace-export" --stacks --compat torch -o "$TMP/torch" "$db" || fail "compat torch"
want=$(q "$db" "SELECT count(*) FROM events WHERE stack_id IS NOT NULL AND cpu_self_ns >= 1000")
expect_eq "$(wc -l <"$TMP/torch" | tr -d ' ')" "$want" "compat torch line count"
expect_eq "$(sort -u "$TMP/torch" | sed 's/ [0-9]*$//' | sort -u)" "train.py(90):_<module>;train.py(40):_forward" "compat torch stack text"
want=$(q "$db" "SELECT sum(cpu_self_ns / 1000) FROM events WHERE stack_id IS NOT NULL AND cpu_self_ns >= 1000")
expect_eq "$(awk '{s += $NF} END {printf "%.0f", s}' "$TMP/torch")" "$want" "compat torch values"
expect_status 2 "$BIN/trace-export" --stacks --compat torch --metric count "$db"
expect_one_line_error
expect_status 2 "$BIN/trace-export" --chrome --compat torch "$db"
