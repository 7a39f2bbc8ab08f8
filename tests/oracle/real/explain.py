#!/usr/bin/env python3
"""Explains a table mismatch event by event: PyTorch's events.tsv against a run.db.

  explain.py GOLDEN_DIR RUN.db [--all] [--limit N]

GOLDEN_DIR is one tests/oracle/real/golden/W (its events.tsv and trace_kineto.json);
RUN.db is `trace-ingest -o RUN.db GOLDEN_DIR/trace_kineto.json`. Events are matched by
(name, thread, start, end) with PyTorch's times (µs from the trace start); for every
matched pair it compares the parent, self CPU time, inclusive and self CPU memory and the
stack, and prints a summary per kind of difference with the first N examples (--all: every
one). Standard library only.
"""
import json
import re
import sqlite3
import sys
from collections import defaultdict


def norm(name):
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


def unescape(v):
    """gen.py's tsv_text() undone: \\\\, \\t and \\n."""
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n"}.get(m.group(1), m.group(1)), v)


def load_pytorch(d):
    evs = {}
    with open(d + "/events.tsv", encoding="utf-8") as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(head, (unescape(v) for v in line.rstrip("\n").split("\t"))))
            for k in ("id", "thread", "start", "end", "cpu_memory_usage", "self_cpu_memory_usage",
                      "self_cpu_time_total", "scope", "is_async"):
                r[k] = int(r[k])
            r["stack"] = r["stack"].split(" | ") if r["stack"] else []
            evs[r["id"]] = r
    return evs


def trace_start(d):
    with open(d + "/trace_kineto.json", encoding="utf-8") as f:
        for e in json.load(f)["traceEvents"]:
            if e.get("cat") == "Trace":
                return e["ts"]
    raise SystemExit("explain.py: no Trace span in trace_kineto.json")


def load_ours(db, t0):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    frames = {}
    for nid, parent, frame in c.execute(
            "SELECT n.id, n.parent_id, s.value FROM stack_nodes n JOIN strings s ON s.id = n.frame_id"):
        frames[nid] = (parent, frame)

    def stack(nid):
        out = []
        while nid is not None and nid in frames:
            out.append(frames[nid][1])
            nid = frames[nid][0]
        return out
    evs = {}
    for row in c.execute(
            "SELECT e.id, s.value, e.kind, e.start_ns, e.end_ns, t.tid, e.parent_id, e.cpu_self_ns,"
            " e.cpu_mem_total, e.cpu_mem_self, e.stack_id, e.flags, e.bytes"
            " FROM events e JOIN strings s ON s.id = e.name_id"
            " LEFT JOIN threads t ON t.id = e.thread_id"):
        i, name, kind, s, e, tid, parent, self_ns, mem, mem_self, st, flags, nbytes = row
        evs[i] = {"id": i, "name": norm(name), "kind": kind, "start": s // 1000 - t0,
                  "end": e // 1000 - t0, "thread": tid, "parent": parent,
                  "self_us": (self_ns or 0) / 1000.0, "mem": mem or 0, "mem_self": mem_self or 0,
                  "stack": stack(st), "async": bool((flags or 0) & 1), "bytes": nbytes}
    return evs


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    limit = 5
    if "--limit" in argv:
        limit = int(argv[argv.index("--limit") + 1])
        args.remove(str(limit))
    if "--all" in argv:
        limit = 10 ** 9
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d, db = args
    pt = load_pytorch(d)
    ours = load_ours(db, trace_start(d))
    MEMORY = 10
    by_key = defaultdict(list)
    for e in ours.values():
        if e["kind"] != MEMORY:
            by_key[(e["name"], e["thread"], e["start"], e["end"])].append(e)
    match = {}
    only_pt = []
    for p in pt.values():
        if p["name"] in ("[memory]", "[OutOfMemory]"):
            continue
        cands = by_key.get((norm(p["name"]), p["thread"], p["start"], p["end"]))
        if cands:
            match[p["id"]] = cands.pop(0)
        else:
            only_pt.append(p)
    only_ours = [e for lst in by_key.values() for e in lst]

    diffs = defaultdict(list)
    for pid, o in match.items():
        p = pt[pid]
        pp = pt.get(int(p["cpu_parent"])) if p["cpu_parent"] else None
        op = ours.get(o["parent"]) if o["parent"] else None
        if (pp and match.get(pp["id"]) is not op) or (pp is None and op is not None):
            diffs["parent"].append("%s [%d,%d) t%d: pytorch parent %s, ours %s" % (
                p["name"], p["start"], p["end"], p["thread"],
                "%s [%d,%d)" % (pp["name"], pp["start"], pp["end"]) if pp else "none",
                "%s [%d,%d)" % (op["name"], op["start"], op["end"]) if op else "none"))
        if p["self_cpu_time_total"] != o["self_us"]:
            diffs["self_cpu"].append("%s [%d,%d) t%d: pytorch %s us, ours %s us" % (
                p["name"], p["start"], p["end"], p["thread"], p["self_cpu_time_total"], o["self_us"]))
        if p["cpu_memory_usage"] != o["mem"]:
            diffs["cpu_mem"].append("%s [%d,%d) t%d: pytorch %d b, ours %d b" % (
                p["name"], p["start"], p["end"], p["thread"], p["cpu_memory_usage"], o["mem"]))
        if p["self_cpu_memory_usage"] != o["mem_self"]:
            diffs["self_cpu_mem"].append("%s [%d,%d) t%d: pytorch %d b, ours %d b" % (
                p["name"], p["start"], p["end"], p["thread"], p["self_cpu_memory_usage"],
                o["mem_self"]))
        if p["stack"] != o["stack"]:
            a, b = p["stack"], o["stack"]
            k = 0
            while k < min(len(a), len(b)) and a[k] == b[k]:
                k += 1
            diffs["stack"].append("%s [%d,%d) t%d: first difference at frame %d: pytorch %r, ours %r"
                                  " (pytorch %d frames, ours %d)" % (
                                      p["name"], p["start"], p["end"], p["thread"], k,
                                      a[k] if k < len(a) else None, b[k] if k < len(b) else None,
                                      len(a), len(b)))
        if bool(p["is_async"]) != o["async"]:
            diffs["async"].append("%s [%d,%d): pytorch async %d, ours %d" % (
                p["name"], p["start"], p["end"], p["is_async"], o["async"]))
    pt_mem = [p for p in pt.values() if p["name"] == "[memory]"]
    our_mem = [e for e in ours.values() if e["kind"] == MEMORY]
    print("events: pytorch %d (+%d unattributed [memory]), ours %d (+%d memory records), matched %d"
          % (len(pt) - len(pt_mem), len(pt_mem), len(ours) - len(our_mem), len(our_mem), len(match)))
    print("pytorch's [memory] rows: %d records, %d bytes" % (
        len(pt_mem), sum(p["cpu_memory_usage"] for p in pt_mem)))

    def show(title, items):
        print("%s: %d" % (title, len(items)))
        for s in items[:limit]:
            print("  " + s)
    show("only in pytorch", ["%s [%d,%d) t%d" % (p["name"], p["start"], p["end"], p["thread"])
                             for p in only_pt])
    show("only in ours", ["%s [%d,%d) t%s" % (e["name"], e["start"], e["end"], e["thread"])
                          for e in only_ours])
    for k in ("parent", "self_cpu", "cpu_mem", "self_cpu_mem", "stack", "async"):
        show(k + " differs", diffs[k])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
