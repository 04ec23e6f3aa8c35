#!/usr/bin/env python3
"""CUDA graph replay loop: a graph of K kernels captured once (torch.cuda.graph), replayed N times."""
import argparse, json, torch
ap = argparse.ArgumentParser(); ap.add_argument("--n", type=int, default=200); ap.add_argument("--k", type=int, default=10)
a = ap.parse_args()
x = torch.ones(1 << 20, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3): x.mul_(1.0)  # warm-up on the side stream, as torch recommends
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    for _ in range(a.k): x.add_(1.0)
for _ in range(a.n): g.replay()
torch.cuda.synchronize()
print(json.dumps({"graph_replays": a.n, "kernels_per_graph": a.k, "value": float(x[0])}), flush=True)
