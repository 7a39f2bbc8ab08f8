"""Oracle cases: the same events as PyTorch 1.13 FunctionEvents and as nvprof databases.

  python3 oracle.py nvprof CASE OUT.nvvp   write CASE as an nvprof-schema SQLite database
  /usr/bin/python3 oracle.py goldens DIR   (needs Debian's python3-torch 1.13) write, for
                                           every case and variant, PyTorch's
                                           key_averages().table() to DIR/CASE.VARIANT.txt
  python3 oracle.py list                   print "CASE VARIANT ARGS..." lines for the test

The cases avoid PyTorch's known defects (docs/semantics.md): no partially overlapping
ranges, no 52-character names, no launches outside an op, no ties in (start, end).
Times are integer microseconds; the nvprof database stores them as nanoseconds.
"""
import sqlite3
import sys

T0_NS = 1600000000000000000
PID = 4242

# An event set: ops (CPU ranges with optional input shapes), launches (a
# cudaLaunchKernel inside an op) and the kernels they start.
#   op:     ("op", name, thread, start_us, end_us, shapes or None)
#   launch: ("launch", thread, start_us, end_us, kernel_name, k_start_us, k_end_us)
CASES = {
    "model": [
        ("op", "model_forward", 1, 0, 1000, None),
        ("op", "aten::linear", 1, 10, 510, [[128, 64], [32, 64], [32]]),
        ("op", "aten::t", 1, 15, 35, [[32, 64]]),
        ("op", "aten::transpose", 1, 18, 30, [[32, 64], [], []]),
        ("op", "aten::addmm", 1, 40, 500, [[32], [128, 64], [64, 32]]),
        ("launch", 1, 420, 460, "volta_sgemm_128x64_nn", 470, 770),
        ("op", "aten::relu", 1, 520, 600, [[128, 32]]),
        ("launch", 1, 540, 580, "vectorized_elementwise_kernel", 780, 820),
        ("op", "aten::relu", 1, 610, 690, [[128, 32]]),
        ("launch", 1, 630, 660, "vectorized_elementwise_kernel", 825, 863),
        ("op", "aten::relu", 2, 5, 50, [[4, 4]]),
        ("op", "aten::sum", 1, 700, 990, [[128, 32]]),
        ("launch", 1, 720, 760, "reduce_kernel", 870, 991),
    ],
    "units": [
        # times across the us / ms / s thresholds, many calls, a thread of its own
        ("op", "ProfilerStep*", 1, 0, 2500000, None),
        ("op", "aten::conv2d", 1, 100, 1200100, [[8, 3, 224, 224], [64, 3, 7, 7]]),
        ("op", "aten::convolution", 1, 200, 1200000, [[8, 3, 224, 224], [64, 3, 7, 7]]),
        ("launch", 1, 1000, 1999, "implicit_convolve_sgemm", 2000, 1002000),
        ("op", "aten::batch_norm", 1, 1200200, 1201200, [[8, 64, 112, 112]]),
        ("launch", 1, 1200300, 1200350, "bn_fw_tr_1C11_kernel_NCHW", 1202000, 1202999),
        ("op", "aten::relu_", 1, 1201300, 1201301, [[8, 64, 112, 112]]),
        ("op", "aten::max_pool2d", 1, 1201400, 2400000, [[8, 64, 112, 112]]),
        ("launch", 1, 1201500, 1201501, "max_pool_forward_nchw", 1203000, 2403000),
        ("op", "aten::empty", 3, 7, 9, [[1]]),
        ("op", "aten::empty", 3, 11, 14, [[1]]),
        ("op", "aten::empty", 3, 20, 999, [[2]]),
        ("op", "aten::zero_", 3, 1000, 1999, [[2]]),
    ],
    "cpu_names": [
        # CPU only: long names are cut at 52 characters + "...", non-ASCII counted as characters
        ("op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 1, 0, 90, None),
        ("op", "torch::autograd::AccumulateGrad", 1, 10, 80, None),
        ("op", "aten::detach", 1, 20, 30, [[16]]),
        ("op", "mon_opération_élémentaire", 1, 100, 150, None),
        ("op", "my_block", 2, 3, 400, None),
        ("op", "aten::mm", 2, 40, 140, [[4, 8], [8, 16]]),
        ("op", "aten::mm", 2, 150, 152, [[4, 8], [8, 16]]),
        ("op", "aten::mm", 2, 160, 399, [[16, 8], [8, 16]]),
    ],
}

# Variants: (name, key_averages kwargs, table kwargs, trace-analyze arguments)
VARIANTS = [
    ("self_gpu", {}, {"sort_by": "self_cuda_time_total", "row_limit": -1},
     ["--sort", "self_cuda_time_total", "-n", "-1"]),
    ("cpu_total", {}, {"sort_by": "cpu_time_total", "row_limit": -1},
     ["--sort", "cpu_time_total", "-n", "-1"]),
    ("first_appearance", {}, {"row_limit": -1}, ["--sort", "none", "-n", "-1"]),
    ("count_top3", {}, {"sort_by": "count", "row_limit": 3}, ["--sort", "count", "-n", "3"]),
    ("avg", {}, {"sort_by": "cpu_time"}, ["--sort", "cpu_time"]),
    ("shapes", {"group_by_input_shapes": True}, {"sort_by": "self_cpu_time_total", "row_limit": -1},
     ["--group-by-shape", "--sort", "self_cpu_time_total", "-n", "-1"]),
    ("limit0", {}, {"sort_by": "cuda_time_total", "row_limit": 0},
     ["--sort", "cuda_time_total", "-n", "0"]),
]


def shape_text(shapes):
    return "[" + ", ".join("[" + ", ".join(str(d) for d in s) + "]" for s in shapes) + "]"


def write_nvprof(case, path):
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE Version(version INTEGER); INSERT INTO Version VALUES(12);
        CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);
        INSERT INTO StringTable VALUES(0, '-- null --');
        CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, flags INT, timestamp INT,
            id INT, objectKind INT, objectId BLOB, name INT, domain INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT, start INT,
            end INT, processId INT, threadId INT, correlationId INT, returnValue INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ INTEGER PRIMARY KEY, start INT,
            end INT, deviceId INT, contextId INT, streamId INT, correlationId INT, name INT);
    """)
    strings = {}

    def sid(s):
        if s not in strings:
            strings[s] = len(strings) + 1
            db.execute("INSERT INTO StringTable VALUES(?, ?)", (strings[s], s))
        return strings[s]

    def blob(tid):
        return PID.to_bytes(4, "little") + tid.to_bytes(4, "little") + bytes(4)

    ns = lambda us: T0_NS + us * 1000
    marker, corr = 0, 0
    for e in CASES[case]:
        if e[0] == "op":
            _, name, tid, s, t, shapes = e
            marker += 1
            text = name + ", op_id = %d" % marker
            if shapes:
                text += ", sizes = " + shape_text(shapes)
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId, name, domain)"
                       " VALUES(2, ?, ?, 2, ?, ?, 0)", (ns(s), marker, blob(tid), sid(text)))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId, name, domain)"
                       " VALUES(4, ?, ?, 2, ?, 0, 0)", (ns(t), marker, blob(tid)))
        else:
            _, tid, s, t, kname, ks, kt = e
            corr += 1
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(cbid, start, end, processId, threadId,"
                       " correlationId, returnValue) VALUES(211, ?, ?, ?, ?, ?, 0)", (ns(s), ns(t), PID, tid, corr))
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start, end, deviceId, contextId,"
                       " streamId, correlationId, name) VALUES(?, ?, 0, 1, 7, ?, ?)", (ns(ks), ns(kt), corr, sid(kname)))
    db.commit()
    db.close()


def torch_events(case):
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import EventList, FunctionEvent
    evs, ops, n = [], [], 0

    def ev(name, tid, s, t, **kw):
        nonlocal n
        n += 1
        kw.setdefault("input_shapes", [])
        kw.setdefault("stack", [])
        kw.setdefault("flops", 0)
        e = FunctionEvent(id=n, name=name, thread=tid, start_us=s, end_us=t, trace_name=name, **kw)
        evs.append(e)
        return e

    for e in CASES[case]:
        if e[0] == "op":
            _, name, tid, s, t, shapes = e
            ops.append((ev(name, tid, s, t, input_shapes=shapes or []), tid, s, t))
        else:
            _, tid, s, t, kname, ks, kt = e
            ev("cudaLaunchKernel", tid, s, t)
            ev(kname, 0, ks, kt, device_type=DeviceType.CUDA)
            # the kernel belongs to the innermost op around the launch (what Kineto's linking does)
            inner = [o for o in ops if o[1] == tid and o[2] <= s and t <= o[3]]
            inner.sort(key=lambda o: o[3] - o[2])
            inner[0][0].append_kernel(kname, 0, kt - ks)
    evs.sort(key=lambda e: [e.time_range.start, -e.time_range.end])
    el = EventList(evs, use_cuda=True, profile_memory=False, with_flops=False)
    el._build_tree()
    return el


def main(argv):
    if argv[1] == "nvprof":
        write_nvprof(argv[2], argv[3])
    elif argv[1] == "list":
        for c in CASES:
            for v in VARIANTS:
                print(c, v[0], " ".join(v[3]))
    elif argv[1] == "goldens":
        import torch
        assert torch.__version__.startswith("1.13"), torch.__version__
        for c in CASES:
            for name, ka, ta, _ in VARIANTS:
                text = torch_events(c).key_averages(**ka).table(**ta)
                with open("%s/%s.%s.txt" % (argv[2], c, name), "w") as f:
                    f.write(text)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
