#!/usr/bin/env python3
"""A small deterministic PyTorch training loop under emit_nvtx(record_shapes=True).

usage: torch_nvtx.py [--steps N] [--warmup W] [--out times.json] [--profiler trace.json]
Each measured step is inside torch.cuda.nvtx.range("step").  Writes per-step wall
times (s) and, with --profiler, runs torch.profiler instead of emit_nvtx and exports
a chrome trace plus kernel/op counts for comparison.  Never run --profiler under
trace-record (both would use CUPTI).
"""
import argparse
import json
import time

import torch
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out")
    ap.add_argument("--profiler")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    dev = torch.device("cuda")
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(8), nn.Flatten(),
        nn.Linear(16 * 64, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10),
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    if a.profiler:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            for _ in range(a.steps):
                t = time.perf_counter()
                with torch.cuda.nvtx.range("step"):
                    step()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
        prof.export_chrome_trace(a.profiler)
    else:
        with torch.autograd.profiler.emit_nvtx(record_shapes=True):
            for _ in range(a.steps):
                t = time.perf_counter()
                with torch.cuda.nvtx.range("step"):
                    step()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"steps": a.steps, "times": times}, f)


if __name__ == "__main__":
    main()
