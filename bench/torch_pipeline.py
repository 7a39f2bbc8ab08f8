"""The PyTorch 1.13 profiler pipeline on the events of a run database, for comparison.

Builds one FunctionEvent per host event and device activity (kernels attached to the op
that launched them, as the Kineto path does), then _build_tree, key_averages and table:
what a user runs after loading a trace in PyTorch.  Prints "SECONDS MAXRSS_KB EVENTS".
usage: /usr/bin/python3 torch_pipeline.py run.db
"""
import resource
import sqlite3
import sys
import time

from torch.autograd import DeviceType
from torch.autograd.profiler_util import EventList, FunctionEvent

t0 = time.time()
db = sqlite3.connect(sys.argv[1])
names = dict(db.execute("SELECT id, value FROM strings"))
rows = db.execute("SELECT e.id, e.kind, k.on_gpu, e.name_id, coalesce(e.thread_id, 0), e.start_ns, e.end_ns,"
                  " e.parent_id FROM events e JOIN kinds k ON k.id = e.kind")
evs, by_id, gpu = [], {}, []
for i, kind, on_gpu, name, tid, s, t, parent in rows:
    fe = FunctionEvent(id=i, name=names[name], thread=tid, start_us=s / 1000.0, end_us=t / 1000.0,
                       trace_name=names[name], input_shapes=[], stack=[], flops=0,
                       device_type=DeviceType.CUDA if on_gpu else DeviceType.CPU)
    evs.append(fe)
    by_id[i] = (fe, parent)
    if on_gpu:
        gpu.append((fe, parent))
for fe, parent in gpu:   # the launching call's op gets the kernel
    if parent in by_id:
        op, up = by_id[parent]
        if up in by_id:
            op = by_id[up][0]
        op.append_kernel(fe.name, 0, fe.time_range.end - fe.time_range.start)
evs.sort(key=lambda e: [e.time_range.start, -e.time_range.end])
el = EventList(evs, use_cuda=True)
el._build_tree()
table = el.key_averages().table(sort_by="self_cuda_time_total", row_limit=100)
print("%.3f %d %d" % (time.time() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(evs)))
