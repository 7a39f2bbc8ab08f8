# trace-export --chrome: valid JSON, required fields, one track per stream, matched flows.
need_traces || return 0
check_chrome() {
    python3 - "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert isinstance(ev, list)
starts = {}; finishes = {}
for e in ev:
    for k in ("name", "ph", "pid"):
        assert k in e, ("missing %s" % k, e)
    if e["ph"] in ("X", "i"):
        assert "ts" in e and "tid" in e and "cat" in e, e
    if e["ph"] == "X":
        assert e["dur"] >= 0, e
    if e["ph"] == "s": starts[e["id"]] = e
    if e["ph"] == "f":
        assert e.get("bp") == "e", e
        finishes[e["id"]] = e
assert set(starts) == set(finishes), "unmatched flows"
gpu = [e for e in ev if e["ph"] == "X" and e["cat"] in ("kernel", "memcpy", "memset")]
for e in gpu:
    assert (e["pid"], e["tid"]) == (e["args"]["device"], e["args"]["stream"]), e
names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
for e in gpu:
    assert names.get((e["pid"], e["tid"]), "").startswith("stream "), ("stream track without a name", e)
print(len(ev), len(starts), len({(e["pid"], e["tid"]) for e in gpu}))
PY
}
for trace in "$TRACES"/nvprof/*; do
    name=$(basename "$trace")
    db="$TMP/${name%.*}.db"
    "$BIN/trace-ingest" -q -o "$db" "$trace" || { fail "ingest $name"; continue; }
    "$BIN/trace-export" --chrome -o "$TMP/t.json" "$db" || { fail "$name: exit $?"; continue; }
    out=$(check_chrome "$TMP/t.json") || { fail "$name: bad chrome trace"; continue; }
    # every API call -> activity link is drawn
    links=$(q "$db" "SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind JOIN events p ON p.id = e.parent_id WHERE k.on_gpu")
    expect_eq "$(echo "$out" | cut -d' ' -f2)" "$links" "$name: flow arrows"
done
# several streams -> several tracks
db="$TMP/kSched__RTX2080Ti_sp_15_mm_1_timeline.db"
streams=$(q "$db" "SELECT count(DISTINCT e.stream_id) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.on_gpu AND e.stream_id IS NOT NULL")
"$BIN/trace-export" --chrome -o "$TMP/t.json" "$db"
expect_eq "$(check_chrome "$TMP/t.json" | cut -d' ' -f3)" "$streams" "one track per stream"
# selection: a time window and a thread keep flows consistent
"$BIN/trace-export" --chrome --time-range 0:200000000 -o "$TMP/w.json" "$db" && check_chrome "$TMP/w.json" >/dev/null \
    || fail "--time-range chrome trace"
