#!/usr/bin/python3
"""Ground truth from real PyTorch 1.13 CPU workloads.

  /usr/bin/python3 tests/oracle/real/gen.py [OUTDIR]     (default: tests/oracle/real/golden)

Needs Debian's python3-torch 1.13 (run it with /usr/bin/python3). Each workload runs in a
process of its own (fresh thread ids, inter-op pool settings, allocator state) and writes
OUTDIR/<workload>/:

  trace_legacy.json    prof.export_chrome_trace() as this build writes it (bare JSON array)
  trace_kineto.json    the profiler's raw KinetoEvents, in Kineto's chrome-trace layout
  table_default.txt    key_averages().table(sort_by="self_cpu_time_total", row_limit=-1)
  table_unsorted.txt   key_averages().table(row_limit=-1)
  table_shapes.txt     key_averages(group_by_input_shape=True).table(sort_by=..., row_limit=-1)
  table_stack5.txt     key_averages(group_by_stack_n=5).table(sort_by=..., row_limit=-1)
  table_top.txt        key_averages().table(sort_by=..., row_limit=-1, top_level_events_only=True)
                       (the workloads written since it was added)
  stacks_self_cpu.txt  export_stacks(path, "self_cpu_time_total") (with_stack=True only)
  events.tsv           prof.function_events after the tree rebuild (a debugging aid)
  rows_*.csv           the key_averages() rows of table_default/shapes/stack5 in
                       trace-analyze's csv columns (compare.py's own check)

and OUTDIR/MANIFEST.md. Times and stack addresses differ from run to run, so a rerun
rewrites every file; the files of one workload always come from one profile.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = ["mlp", "conv", "rnn", "attn", "fork", "sched", "customfn", "shapesmix", "ckpt", "loop",
             "flops", "autocast", "dblgrad", "exc", "bare", "toplevel", "sparse", "views", "jitmod",
             "losses", "repeat2", "deep", "infermod", "names", "frames"]
SORT = "self_cpu_time_total"
USER_SCOPE = 7


def prof_args():
    return dict(record_shapes=True, with_stack=True, profile_memory=True)


# ---- the raw events in Kineto's layout ---------------------------------------------------

def kineto_event(ev, pid):
    """One KinetoEvent as Kineto's chrome trace writer would lay it out."""
    import torch
    name = ev.name()
    start, dur = ev.start_us(), ev.duration_us()
    tid = ev.start_thread_id()
    if name in ("[memory]", "[OutOfMemory]"):
        dev = ev.device_type()
        return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": name,
                "pid": pid, "tid": tid, "ts": start,
                "args": {"Device Type": int(dev.value if hasattr(dev, "value") else dev),
                         "Device Id": ev.device_index(), "Bytes": ev.nbytes()}}
    args = {"External id": ev.correlation_id(),
            "Input Dims": [list(s) for s in ev.shapes()],
            "Input type": list(ev.dtypes())}
    if ev.sequence_nr() >= 0:
        args["Sequence number"] = ev.sequence_nr()
    if ev.fwd_thread_id() > 0:
        args["Fwd thread id"] = ev.fwd_thread_id()
    if ev.scope() != 0:
        # Not in Kineto's own traces; PyTorch needs it: events of scope 1 (backward
        # functions) give their subtree the forward op's stack.
        args["Scope"] = ev.scope()
    stack = list(ev.stack())
    if stack:
        args["Call stack"] = ";".join(stack)
    if ev.flops() > 0:
        args["flops"] = ev.flops()   # with_flops=True only
    if ev.linked_correlation_id() > 0:
        args["Linked correlation id"] = ev.linked_correlation_id()
    dev = ev.device_type()
    if dev != torch.autograd.DeviceType.CPU:
        args["Device Type"] = int(dev.value if hasattr(dev, "value") else dev)
        args["Device Id"] = ev.device_index()
    cat = "user_annotation" if ev.scope() == USER_SCOPE else "cpu_op"
    if ev.is_async() or ev.start_thread_id() != ev.end_thread_id():
        cat = "cpu_op"
        args["Async"] = 1
        args["End thread id"] = ev.end_thread_id()
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
            "ts": start, "dur": dur, "args": args}


def write_kineto(raw, path):
    pid = os.getpid()
    events = list(raw.kineto_results.events())
    t0 = raw.kineto_results.trace_start_us()
    out = [kineto_event(e, pid) for e in events]
    end = max([e.start_us() + e.duration_us() for e in events] + [t0])
    # Kineto's span of the whole profile: it carries the trace start PyTorch subtracts.
    out.insert(0, {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
                   "tid": "PyTorch Profiler", "ts": t0, "dur": end - t0,
                   "args": {"Op count": 0}})
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        f.write(",\n".join(json.dumps(e, ensure_ascii=False) for e in out))
        f.write("\n]}\n")
    return out


# ---- PyTorch's own outputs ----------------------------------------------------------------

def write_text(path, s):
    with open(path, "w", newline="") as f:
        f.write(s)


def tsv_text(v):
    """A field with its backslashes, tabs and newlines escaped: a name may hold any of them."""
    return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def write_events_tsv(raw, path):
    cols = ["id", "name", "thread", "fwd_thread", "start", "end", "scope", "sequence_nr",
            "is_async", "input_shapes", "cpu_memory_usage", "self_cpu_memory_usage",
            "self_cpu_time_total", "cpu_parent", "stack"]
    lines = ["\t".join(cols)]
    for e in raw.function_events:
        lines.append("\t".join(tsv_text(v) for v in [
            e.id, e.name, e.thread, e.fwd_thread, e.time_range.start, e.time_range.end,
            e.scope, e.sequence_nr, int(e.is_async), e.input_shapes, e.cpu_memory_usage,
            e.self_cpu_memory_usage, e.self_cpu_time_total,
            e.cpu_parent.id if e.cpu_parent is not None else "",
            " | ".join(e.stack or [])]))
    write_text(path, "\n".join(lines) + "\n")


def write_rows_csv(avgs, path, shapes=False, stack=False):
    """PyTorch's own key_averages() rows in trace-analyze's csv columns (raw ns and bytes),
    plus is_async (PyTorch prints an async row's CPU total % as a bare 0): compare.py must
    find no difference between these and the table they come from."""
    import csv
    total = sum(e.self_cpu_time_total for e in avgs)
    cols = ["name", "device", "self_cpu_pct", "self_cpu_ns", "cpu_total_pct", "cpu_total_ns",
            "cpu_avg_ns", "cpu_mem_bytes", "self_cpu_mem_bytes", "calls", "is_async"]
    cols += ["input_shapes"] if shapes else []
    cols += ["stack"] if stack else []
    pct = lambda v: "%g" % (v * 100.0 / total) if total else "nan"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for e in sorted(avgs, key=lambda e: e.self_cpu_time_total, reverse=True):
            row = [e.key, "cpu", pct(e.self_cpu_time_total), round(e.self_cpu_time_total * 1000),
                   pct(e.cpu_time_total), round(e.cpu_time_total * 1000),
                   "%g" % (e.cpu_time * 1000), e.cpu_memory_usage, e.self_cpu_memory_usage,
                   e.count, int(e.is_async)]
            row += [str(e.input_shapes)] if shapes else []
            row += [" <- ".join(e.stack)] if stack else []
            w.writerow(row)


def dump(prof, outdir):
    """prof: a torch.profiler.profile or torch.autograd.profiler.profile that has stopped."""
    import torch
    raw = prof.profiler if isinstance(prof, torch.profiler.profile) else prof
    os.makedirs(outdir, exist_ok=True)
    p = lambda n: os.path.join(outdir, n)
    prof.export_chrome_trace(p("trace_legacy.json"))
    write_kineto(raw, p("trace_kineto.json"))
    write_text(p("table_default.txt"), prof.key_averages().table(sort_by=SORT, row_limit=-1))
    write_text(p("table_unsorted.txt"), prof.key_averages().table(row_limit=-1))
    write_text(p("table_shapes.txt"), prof.key_averages(group_by_input_shape=True).table(
        sort_by=SORT, row_limit=-1))
    write_text(p("table_stack5.txt"), prof.key_averages(group_by_stack_n=5).table(
        sort_by=SORT, row_limit=-1))
    write_text(p("table_top.txt"), prof.key_averages().table(sort_by=SORT, row_limit=-1,
                                                             top_level_events_only=True))
    if raw.with_stack:   # PyTorch asserts otherwise
        prof.export_stacks(p("stacks_self_cpu.txt"), "self_cpu_time_total")
    write_rows_csv(prof.key_averages(), p("rows_default.csv"))
    write_rows_csv(prof.key_averages(group_by_input_shape=True), p("rows_shapes.csv"), shapes=True)
    write_rows_csv(prof.key_averages(group_by_stack_n=5), p("rows_stack5.csv"), stack=True)
    write_events_tsv(raw, p("events.tsv"))


def cpu_profile():
    import torch
    return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **prof_args())


# ---- the workloads --------------------------------------------------------------------------

def w_mlp(outdir):
    """MLP training: 3 steps of forward, cross-entropy, backward, SGD(momentum) step, zero_grad."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    step()   # the first step creates the momentum buffers outside the profile
    with cpu_profile() as prof:
        for _ in range(3):
            step()
    dump(prof, outdir)


def w_conv(outdir):
    """Small conv net (conv2d, batchnorm, relu, maxpool, linear): forward, backward, Adam step."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(32, 5))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(4, 3, 16, 16)
    model(x).sum().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    with cpu_profile() as prof:
        out = model(x)
        loss = out.square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    dump(prof, outdir)


def w_rnn(outdir):
    """LSTM and GRU forward and backward, through the autograd profiler API."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    lstm = nn.LSTM(8, 16)
    gru = nn.GRU(8, 16, batch_first=True)
    x = torch.randn(4, 3, 8)
    xb = torch.randn(3, 4, 8)
    with torch.autograd.profiler.profile(**prof_args()) as prof:
        out, (h, c) = lstm(x)
        g, hg = gru(xb)
        (out.sum() + h.mean() + g.pow(2).sum() + hg.sum()).backward()
    dump(prof, outdir)


def w_attn(outdir):
    """TransformerEncoderLayer: a training forward+backward, then an eval forward (fast path)."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.1,
                                       batch_first=True)
    x = torch.randn(2, 6, 16)
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[1, 4:] = True
    layer(x).sum().backward()
    with cpu_profile() as prof:
        layer.train()
        y = layer(x, src_key_padding_mask=mask)
        y.sum().backward()
        layer.eval()
        with torch.no_grad():
            layer(x)
    dump(prof, outdir)


def w_fork(outdir):
    """TorchScript fork/wait: forked tasks on inter-op pool threads, and the calling script
    function ends on another thread than it started on (an async event)."""
    import torch
    torch.set_num_interop_threads(2)

    # Compiled from a string: TorchScript frames name the source file by its absolute path,
    # which would tie the goldens to the checkout's location; this way they read <string>.
    cu = torch.jit.CompilationUnit("""
def branch(x, w):
    for _ in range(4):
        x = torch.relu(torch.mm(x, w))
    return x.sum()

def forked(x, w):
    futs = [torch.jit.fork(branch, x + float(i), w) for i in range(3)]
    total = torch.zeros(1)
    for f in futs:
        total = total + torch.jit.wait(f)
    return total
""")
    forked = cu.forked

    torch.manual_seed(0)
    x, w = torch.randn(32, 32), torch.randn(32, 32) / 8
    forked(x, w)
    forked(x, w)
    # Python threads are left out: this build's profiler observes only the thread that
    # started it and the threads it hands its state to (autograd, inter-op tasks).
    # Whether `forked` ends on a pool thread depends on whether its first future is still
    # running when it waits; profile again (a few times at most) until it does.
    for attempt in range(20):
        with cpu_profile() as prof:
            forked(x, w)
            torch.sigmoid(x).mean()
        if any(e.is_async() or e.start_thread_id() != e.end_thread_id()
               for e in prof.profiler.kineto_results.events()):
            break
    else:
        print("fork: no async event in 20 profiles", file=sys.stderr)
    dump(prof, outdir)


def scheduled(outdir, name, repeat, steps, body):
    """Runs body(step) for each of steps steps under schedule(wait=1, warmup=1, active=2,
    repeat=repeat), each finished cycle dumped to outdir (the last one stays there)."""
    import torch
    done = []

    def ready(p):
        dump(p, outdir)
        done.append(p.step_num)

    sched = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=repeat)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=ready, **prof_args()) as prof:
        for step in range(steps):
            body(step)
            prof.step()
    if len(done) != repeat:
        raise SystemExit("%s: expected %d trace(s), got %d" % (name, repeat, len(done)))


def w_sched(outdir):
    """Nested record_function ranges under a schedule: ProfilerStep#N events, one active window."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    lin = nn.Linear(8, 8)
    x = torch.randn(4, 8)

    def body(step):
        with torch.profiler.record_function("outer"):
            with torch.profiler.record_function("inner_a"):
                y = lin(x).relu()
            with torch.profiler.record_function("inner_b"):
                with torch.profiler.record_function("leaf"):
                    y = y * 2.0
                y.sum().backward()
    scheduled(outdir, "sched", 1, 5, body)


def w_customfn(outdir):
    """A custom torch.autograd.Function with record_function ranges inside forward and backward
    (and a nested same-named range), used twice, then backward."""
    import torch
    from torch.profiler import record_function
    torch.manual_seed(0)

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            with record_function("scale_fwd"):
                ctx.save_for_backward(x, w)
                with record_function("scale_fwd"):
                    y = x * w
                return y.sin()

        @staticmethod
        def backward(ctx, go):
            x, w = ctx.saved_tensors
            with record_function("scale_bwd"):
                c = (x * w).cos() * go
                with record_function("scale_bwd_inner"):
                    gx = c * w
                    gw = (c * x).sum(0)
            return gx, gw

    x = torch.randn(8, 4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    Scale.apply(x, w).sum().backward()
    with cpu_profile() as prof:
        y = Scale.apply(x, w)
        z = Scale.apply(y, w)
        (z.sum() + y.mean()).backward()
    dump(prof, outdir)


def w_shapesmix(outdir):
    """record_shapes on ops with scalar, list, None and optional inputs: cat of a list,
    F.interpolate, torch.where, clamp(min=None), full, pad, einsum, index_put, arange."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 5)
    y = torch.randn(2, 3, 5, 5)
    with cpu_profile() as prof:
        c = torch.cat([x, y, x], dim=1)
        up = F.interpolate(c, scale_factor=2.0, mode="bilinear", align_corners=False)
        up2 = F.interpolate(x, size=(7, 7), mode="nearest")
        w = torch.where(x > 0, x, y)
        w2 = torch.where(x > 0, x, torch.tensor(0.0))
        cl = torch.clamp(y, min=None, max=0.5)
        cl2 = torch.clamp(y, min=-0.1)
        f = torch.full((3, 4), 2.5)
        p = F.pad(x, (1, 2, 0, 1), value=0.0)
        e = torch.einsum("bchw,bchw->bc", x, y)
        z = torch.zeros(5)
        z.index_put_((torch.tensor([0, 2]),), torch.tensor([1.0, 2.0]))
        ar = torch.arange(0, 10, 2)
        s = torch.sum(x, dim=[1, 2], keepdim=True)
        mx = torch.max(x, dim=1)
        tot = (up.sum() + up2.sum() + w.sum() + w2.sum() + cl.sum() + cl2.sum() + f.sum()
               + p.sum() + e.sum() + z.sum() + ar.sum() + s.sum() + mx.values.sum())
        tot.item()
    dump(prof, outdir)


def w_ckpt(outdir):
    """Gradient checkpointing: torch.utils.checkpoint (reentrant, and use_reentrant=False)
    around two small blocks; forward + backward recomputes the forward inside backward."""
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    b1 = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 16))
    b2 = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
    x = torch.randn(4, 16, requires_grad=True)

    def run():
        h = checkpoint(b1, x)
        h = checkpoint(b2, h, use_reentrant=False)
        h.sum().backward()
    run()
    with cpu_profile() as prof:
        run()
    dump(prof, outdir)


def w_loop(outdir):
    """Aggregation stress: 200 identical tiny ops in a loop, nested record_function ranges with
    the same names at different depths, a non-ASCII name, a name longer than the Name column
    and one of exactly 52 characters."""
    import torch
    from torch.profiler import record_function
    torch.manual_seed(0)
    x = torch.randn(4)
    long_name = "a_very_long_user_annotation_name_that_exceeds_fifty_five_chars_xyz"
    with cpu_profile() as prof:
        for i in range(200):
            x = x + 1.0
        with record_function("blk"):
            with record_function("blk"):
                with record_function("blk"):
                    x = x * 0.5
                x = x.relu()
            with record_function("step"):
                with record_function("blk"):
                    x = x - 0.1
        with record_function("step"):
            x = x.exp()
        with record_function("naïve_ζ_名前"):
            x = x.sqrt()
        with record_function(long_name):
            x = x.neg()
        with record_function("x" * 52):
            x = x.abs()
    dump(prof, outdir)


def w_flops(outdir):
    """with_flops=True and with_modules=True: a FLOPs column beside the stacks (PyTorch prints
    each under the other's header), nn.Module frames; conv2d, linear, addmm, matmul."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(2, 4, 3), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    x = torch.randn(2, 2, 8, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_flops=True,
                                with_modules=True, **prof_args()) as prof:
        m(x).sum().backward()
        torch.addmm(torch.randn(3), torch.randn(2, 5), torch.randn(5, 3))
        torch.matmul(torch.randn(2, 3, 4), torch.randn(4, 5))
    dump(prof, outdir)


def w_autocast(outdir):
    """torch.autocast on the CPU (bfloat16): the casts it inserts (aten::to, _to_copy, copy_)
    inside linear, then backward; explicit dtype round trips."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    x = torch.randn(8, 16)
    with cpu_profile() as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = m(x).float().sum()
        loss.backward()
        x.double().to(torch.float16).to(torch.float32).sum().item()
    dump(prof, outdir)


def w_dblgrad(outdir):
    """Double backward: torch.autograd.grad with create_graph=True, a backward through the
    gradient, then a tensor hook that runs during backward."""
    import torch
    torch.manual_seed(0)
    x = torch.randn(6, requires_grad=True)
    w = torch.randn(6, requires_grad=True)
    with cpu_profile() as prof:
        y = (x * w).sin().sum()
        g, = torch.autograd.grad(y, x, create_graph=True)
        g.pow(2).sum().backward()
        x.register_hook(lambda gr: gr * 2)
        x.exp().sum().backward()
    dump(prof, outdir)


def w_exc(outdir):
    """record_function as a decorator, and a range left by an exception raised inside it
    (a shape mismatch in torch.mm), caught, then more work."""
    import torch
    from torch.profiler import record_function
    torch.manual_seed(0)
    x = torch.randn(4, 4)

    @record_function("decorated")
    def f(x):
        return x.mm(x)
    with cpu_profile() as prof:
        for i in range(3):
            try:
                with record_function("may_fail"):
                    y = f(x)
                    if i == 1:
                        torch.mm(x, torch.randn(3, 3))
            except RuntimeError:
                pass
        with record_function("after"):
            y = y + 1
        y.sum().item()
    dump(prof, outdir)


def w_bare(outdir):
    """The profiler's defaults: no shapes, stacks or memory recorded. An MLP training step
    with backward; no Input Shapes column when grouped by shape (every op's is []), and no
    Source Location when grouped by stack."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    dump(prof, outdir)


def w_toplevel(outdir):
    """For table(top_level_events_only=True): relu first nested in a module then at the top
    level (no row), linear at the top level first then nested in a range (one row counting
    both), and ops only ever nested."""
    import torch
    from torch import nn
    from torch.profiler import record_function
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    lin = nn.Linear(8, 8)
    x = torch.randn(4, 8)
    with cpu_profile() as prof:
        y = lin(x)
        with record_function("model"):
            m(x).sum().backward()
        torch.relu(x)
        with record_function("again"):
            y = lin(y)
        y.sum().item()
    dump(prof, outdir)

def w_sparse(outdir):
    """EmbeddingBag and Embedding with sparse gradients; an Adagrad and a SparseAdam step."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    bag = nn.EmbeddingBag(100, 8, mode="sum", sparse=True)
    emb = nn.Embedding(50, 4, sparse=True)
    opt1 = torch.optim.Adagrad(bag.parameters(), lr=0.1)
    opt2 = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    off = torch.tensor([0, 4])
    ids = torch.tensor([[1, 2, 3], [4, 4, 7]])

    def step():
        loss = bag(idx, off).pow(2).sum() + emb(ids).sum()
        loss.backward()
        opt1.step()
        opt2.step()
        opt1.zero_grad()
        opt2.zero_grad()
    step()
    with cpu_profile() as prof:
        step()
        step()
    dump(prof, outdir)


def w_views(outdir):
    """In-place ops and views: add_, relu_, masked_fill_, transpose, narrow, expand,
    contiguous, as_strided, index_select, scatter_add_, then backward through views."""
    import torch
    torch.manual_seed(0)
    a = torch.randn(6, 8)
    w = torch.randn(8, 8, requires_grad=True)
    with cpu_profile() as prof:
        b = a.clone()
        b.add_(1.0)
        b.relu_()
        b.masked_fill_(b > 1.5, 0.0)
        t = b.transpose(0, 1)
        n = t.narrow(0, 2, 3)
        e = torch.randn(1, 8).expand(6, 8)
        c = (e + b).contiguous()
        s = c.as_strided((3, 3), (8, 1), 2)
        sel = c.index_select(1, torch.tensor([0, 3, 5]))
        z = torch.zeros(3, 8)
        z.scatter_add_(0, torch.tensor([[0, 1, 2, 0, 1, 2, 0, 1]] * 6)[:3], c[:3])
        y = (c @ w)
        y.t().narrow(0, 0, 4).sum().backward()
        (n.sum() + s.sum() + sel.sum() + z.sum()).item()
        v = torch.randn(4, 4, requires_grad=True)
        u = v * 1.0
        u[1:3].mul_(2.0)
        u.view(16).unsqueeze(0).squeeze(0).sum().backward()
    dump(prof, outdir)


def w_jitmod(outdir):
    """A torch.jit.script'ed nn.Module: forward and backward (TorchScript scope events,
    DifferentiableGraphBackward), warmed up so the profiling executor has optimized it."""
    import torch
    from torch import nn
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.Linear(16, 32)
            self.l2 = nn.Linear(32, 8)

        def forward(self, x):
            h = torch.tanh(self.l1(x))
            if h.sum() > 0:
                h = h * 2.0
            return torch.sigmoid(self.l2(h)).sum()

    m = torch.jit.script(Block())
    x = torch.randn(4, 16)
    for _ in range(4):
        m(x).backward()
    with cpu_profile() as prof:
        m(x).backward()
        m(x).backward()
    dump(prof, outdir)


def w_losses(outdir):
    """Several losses with backward: MSE, BCEWithLogits, NLL(log_softmax), KLDiv, SmoothL1."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    x = torch.randn(8, 5, requires_grad=True)
    t = torch.randn(8, 5)
    cls = torch.randint(0, 5, (8,))
    with cpu_profile() as prof:
        l1 = F.mse_loss(x, t)
        l2 = F.binary_cross_entropy_with_logits(x, (t > 0).float())
        l3 = F.nll_loss(F.log_softmax(x, dim=1), cls)
        l4 = F.kl_div(F.log_softmax(x, dim=1), F.softmax(t, dim=1), reduction="batchmean")
        l5 = F.smooth_l1_loss(x, t, beta=0.5)
        (l1 + l2 + l3 + l4 + l5).backward()
    dump(prof, outdir)


def w_repeat2(outdir):
    """A schedule with repeat=2: on_trace_ready is called twice; the last trace is kept."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    lin = nn.Linear(8, 8)
    x = torch.randn(4, 8)

    def body(step):
        with torch.profiler.record_function("iter"):
            y = lin(x).relu()
            if step % 2:
                y = y * 3.0
            y.sum().backward()
    scheduled(outdir, "repeat2", 2, 10, body)


def w_deep(outdir):
    """record_function ranges nested 10 deep (same and different names), empty ranges and
    very short ops (views, size, empty(0)): many zero-length events."""
    import torch
    from torch.profiler import record_function
    torch.manual_seed(0)
    x = torch.randn(3, 3)

    def nest(d):
        if d == 0:
            y = x.t()
            torch.empty(0)
            x.view(9)
            with record_function("empty"):
                pass
            return (y + 1.0).sum()
        with record_function("lvl%d" % (d % 3)):
            with record_function("d"):
                pass
            return nest(d - 1)
    with cpu_profile() as prof:
        for _ in range(3):
            nest(10)
        for _ in range(50):
            x.select(0, 1)
            with record_function("z"):
                pass
    dump(prof, outdir)


def w_infermod(outdir):
    """A small CNN of nested nn.Modules in eval mode under torch.inference_mode, with
    with_modules=True (nn.Module frames of nested modules)."""
    import torch
    from torch import nn
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1)
            self.bn = nn.BatchNorm2d(c)
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.bn(self.conv(x))) + x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1)
            self.blocks = nn.Sequential(Block(4), Block(4))
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))

        def forward(self, x):
            return self.head(self.blocks(self.stem(x)))

    m = Net().eval()
    x = torch.randn(2, 3, 12, 12)
    with torch.inference_mode():
        m(x)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                with_modules=True, **prof_args()) as prof:
        with torch.inference_mode():
            m(x)
            m(x).softmax(-1)
    dump(prof, outdir)


def w_names(outdir):
    """record_function names with commas, quotes, backslashes, a tab, unicode, a long name,
    names that look like C++ mangled names (PyTorch demangles them), 1-char names, and
    one starting with ProfilerStep# (PyTorch rewrites it to ProfilerStep*)."""
    import torch
    from torch.profiler import record_function
    torch.manual_seed(0)
    x = torch.randn(4)
    names = ['a, b, c', 'say "hi"', "it's", 'back\\slash', 'tab\there', 'émoji 🚀 名',
             'L' * 70 + ', "q"', '_ZN3foo3barEv', '_Z3bazi', 't', 'x', 'ProfilerStep#user',
             '  spaced  ', 'semi;colon', '']
    with cpu_profile() as prof:
        for n in names:
            with record_function(n):
                x = x + 1.0
        with record_function('a, b, c'):
            x = x * 2.0
    dump(prof, outdir)


def w_frames(outdir):
    """Python frames whose file names hold a space, a tab, a comma and a quote (code compiled
    under such a file name): export_stacks' '_' rule and the Source Location column.  (Not a
    ';': Kineto's "Call stack" joins the frames with it, so such a name reads as two frames.)"""
    import torch
    torch.manual_seed(0)
    src = "def f(x):\n    return (x * 2.0).relu()\n\ndef g(x):\n    return f(x + 1.0).sum()\n"
    fns = {}
    for fname in ['my dir/we ird,"q".py', "tab\tfile.py"]:
        ns = {"torch": torch}
        exec(compile(src, fname, "exec"), ns)
        fns[fname] = ns["g"]
    x = torch.randn(5, requires_grad=True)
    with cpu_profile() as prof:
        for g in fns.values():
            g(x).backward()
    dump(prof, outdir)

# ---- driver ---------------------------------------------------------------------------------

def run_one(name, outdir):
    import torch
    if name != "fork":
        torch.set_num_threads(1)
    globals()["w_" + name](os.path.join(outdir, name))


def human(n):
    return "%.1f KB" % (n / 1024.0) if n < 1024 * 1024 else "%.2f MB" % (n / 1048576.0)


def manifest(outdir):
    import torch
    lines = ["# Real PyTorch workloads: golden outputs", "",
             "Written by `/usr/bin/python3 tests/oracle/real/gen.py %s` under PyTorch %s "
             "(Debian python3-torch, CPU only, no Kineto library: this build's "
             "`export_chrome_trace` writes the legacy bare array)."
             % (os.path.relpath(outdir, os.path.join(HERE, "..", "..", "..")), torch.__version__),
             "Re-running gen.py regenerates everything (times and stack addresses change "
             "from run to run; the files of one workload always come from one profile).",
             "See ../README.md for what each file is and how trace_kineto.json is laid out.", "",
             "| workload | exercises | files |", "|---|---|---|"]
    total = 0
    for w in WORKLOADS:
        d = os.path.join(outdir, w)
        doc = " ".join(globals()["w_" + w].__doc__.split())
        sizes = []
        for f in sorted(os.listdir(d)):
            n = os.path.getsize(os.path.join(d, f))
            total += n
            sizes.append("%s %s" % (f, human(n)))
        lines.append("| %s | %s | %s |" % (w, doc, ", ".join(sizes)))
    lines += ["", "Total: %s." % human(total), ""]
    write_text(os.path.join(outdir, "MANIFEST.md"), "\n".join(lines))


def main(argv):
    if len(argv) >= 2 and argv[1] == "--one":
        run_one(argv[2], argv[3])
        return 0
    outdir = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(HERE, "golden"))
    names = argv[2:] or WORKLOADS
    root = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
    for w in names:
        print("workload", w, file=sys.stderr)
        # A relative script path keeps the recorded frames free of this checkout's location.
        subprocess.run([sys.executable, os.path.relpath(os.path.abspath(__file__), root),
                        "--one", w, outdir], check=True, cwd=root)
    if all(os.path.isdir(os.path.join(outdir, w)) for w in WORKLOADS):
        manifest(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
