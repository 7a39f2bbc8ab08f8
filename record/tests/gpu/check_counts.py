#!/usr/bin/env python3
"""Checks a run.db recorded from counts.cu against the counts it printed.

usage: check_counts.py RUN_DB EXPECTED_JSON_LINE [--capture N]
Prints one line per check and exits 1 if any fails.  With --capture N only N
kernels are expected (a capture-range recording); the other counts are not checked.
"""
import json
import sqlite3
import sys


def main():
    db, expected = sys.argv[1], json.loads(sys.argv[2])
    capture = int(sys.argv[sys.argv.index("--capture") + 1]) if "--capture" in sys.argv else None
    con = sqlite3.connect(db)

    def one(sql, *args):
        return con.execute(sql, args).fetchone()[0]

    def kind(name):
        return one("SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind WHERE k.name = ?", name)

    def named(kname, like):
        return one("SELECT count(*) FROM events e JOIN kinds k ON k.id = e.kind "
                   "JOIN strings s ON s.id = e.name_id WHERE k.name = ? AND s.value LIKE ?", kname, like)

    checks = []
    if capture is not None:
        checks.append(("kernels in capture range", kind("kernel"), capture))
    else:
        checks += [
            ("kernels", kind("kernel"), expected["kernels"]),
            ("vec_add kernels", named("kernel", "vec_add%"), expected["vec_add"]),
            ("scale kernels", named("kernel", "scale%"), expected["scale"]),
            ("__cudaLaunchKernel calls", named("runtime", "__cudaLaunchKernel%"), expected["launch_api"]),
            ("memsets", kind("memset"), expected["memset"]),
            ("memcpys", kind("memcpy"), expected["memcpy"]),
            ("memcpy bytes", one("SELECT coalesce(sum(bytes), 0) FROM events WHERE kind = 8"), expected["memcpy_bytes"]),
            ("NVTX ranges", kind("range"), expected["ranges"]),
            ("'setup' range (NVTX before cuInit)", named("range", "setup"), 1),
            ("NVTX marks", kind("mark"), expected["marks"]),
            ("kernel streams", one("SELECT count(DISTINCT stream_id) FROM events WHERE kind = 7"), expected["streams"]),
            # each launch has exactly one kernel of its correlation id
            ("launches without exactly one kernel", one(
                "SELECT count(*) FROM events a JOIN strings s ON s.id = a.name_id "
                "WHERE a.kind = 4 AND s.value LIKE '__cudaLaunchKernel%' AND "
                "(SELECT count(*) FROM events k WHERE k.kind = 7 AND k.correlation = a.correlation) != 1"), 0),
            ("kernels starting before their launch", one(
                "SELECT count(*) FROM events k JOIN events a ON a.correlation = k.correlation AND a.kind = 4 "
                "WHERE k.kind = 7 AND k.start_ns < a.start_ns"), 0),
            ("zero-length or zero-timestamp kernels", one(
                "SELECT count(*) FROM events WHERE kind = 7 AND (start_ns <= 0 OR end_ns <= start_ns)"), 0),
            ("API threads = NVTX threads", one(
                "SELECT count(*) FROM (SELECT DISTINCT thread_id FROM events WHERE kind = 4 "
                "EXCEPT SELECT DISTINCT thread_id FROM events WHERE kind IN (1, 3))"), 0),
        ]
    failed = 0
    for name, got, want in checks:
        ok = got == want
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {got} (expected {want})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
