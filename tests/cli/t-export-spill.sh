# The export scan's temporary file holds each sorted chunk as differences from the
# row before, in varints: every value must come back, the largest and the most
# negative too.  Ids, stream and stack ids and memory values at the ends of int64,
# merged from chunks of 16 rows, give what one chunk gives.
X="$BIN/trace-export" I="$BIN/trace-ingest"
root=$(cd "$GOLDEN_DIR/../../.." && pwd)
expect_status 0 "$I" -q -o run.db "$root/sample-traces/lm-step.nvvp"
cols="kind, name_id, raw_name_id, start_ns, end_ns, thread_id, stream_id, correlation, parent_id, depth,
      shape_id, stack_id, seq, op_id, bytes, flops, flags, cpu_total_ns, cpu_self_ns, gpu_total_ns,
      gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self"
q run.db "INSERT INTO events (id, $cols) SELECT id + 9223372036854775000, $cols FROM events WHERE id <= 200;
          INSERT INTO events (id, $cols) SELECT id - 9223372036854775000, $cols FROM events WHERE id <= 200;
          UPDATE events SET cpu_mem_self = 9223372036854775807, gpu_mem_self = -9223372036854775808
              WHERE id % 3 = 0;
          UPDATE events SET cpu_mem_self = -9223372036854775808, gpu_mem_self = 9223372036854775807
              WHERE id % 3 = 1;
          UPDATE events SET parent_id = 9223372036854775807 WHERE id % 7 = 2 AND kind IN (7, 8, 9);
          UPDATE events SET stream_id = -9223372036854775808 WHERE id % 5 = 1 AND kind IN (7, 8, 9);
          UPDATE events SET thread_id = 9223372036854775807 WHERE id % 11 = 3 AND kind = 4;" \
    || fail "cannot edit run.db"
[ "$(q run.db "SELECT count(*) FROM events WHERE id < 0")" -gt 0 ] || fail "no negative ids made"
for how in "--stacks" "--stacks --metric self_cpu_mem" "--stacks --metric self_gpu_mem" \
           "--stacks --metric count --stack-source tree" "--flamegraph --metric cpu_total"; do
    expect_status 0 "$X" $how -o one.out run.db
    TR_SCAN_CHUNK_ROWS=16 expect_status 0 "$X" $how -o many.out run.db
    cmp -s one.out many.out || fail "$how: the rows read back from the temporary file differ"
done
