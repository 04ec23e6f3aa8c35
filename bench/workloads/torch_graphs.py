#!/usr/bin/env python3
"""PyTorch training with CUDA graphs the way users get them: an MLP compiled with
torch.compile(mode="reduce-overhead") (Inductor's Triton kernels and cuBLAS, forward and backward
replayed from CUDA graph trees), SGD step eager. Prints one JSON line (losses, median step time).
  python3 bench/workloads/torch_graphs.py [--steps 20] [--truth FILE.json] [--cutrace-window]
--truth FILE: torch.profiler (CUDA activities, i.e. CUPTI) over the timed steps, exported as a
  Chrome trace (bench/gpu/jax_compare.py --chrome reads it).
--cutrace-window: cutrace.start()/stop() around the timed steps (record with --capture-range
  manual and PYTHONPATH=python)."""
import argparse, json, statistics, time
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--warmup", type=int, default=10)
ap.add_argument("--truth")
ap.add_argument("--cutrace-window", action="store_true")
a = ap.parse_args()

torch.manual_seed(0)
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024), torch.nn.LayerNorm(1024)]
model = torch.nn.Sequential(*layers).cuda()
compiled = torch.compile(model, mode="reduce-overhead")
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device="cuda")
y = torch.randn(256, 1024, device="cuda")


def step():
    torch.compiler.cudagraph_mark_step_begin()
    loss = ((compiled(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


for _ in range(a.warmup):
    step()
torch.cuda.synchronize()


def timed():
    losses, ms = [], []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        loss = step()
        losses.append(float(loss))
        ms.append((time.perf_counter() - t0) * 1e3)
    torch.cuda.synchronize()
    return losses, ms


if a.truth:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        losses, ms = timed()
    prof.export_chrome_trace(a.truth)
elif a.cutrace_window:
    import cutrace
    cutrace.start()
    losses, ms = timed()
    cutrace.stop()
else:
    losses, ms = timed()
print(json.dumps({"torch": torch.__version__, "steps": a.steps, "step_ms": statistics.median(ms),
                  "losses": [repr(v) for v in losses]}))
