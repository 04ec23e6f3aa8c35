#!/usr/bin/env python3
"""A few training steps of a small MLP under torch.autograd.profiler.emit_nvtx(): PyTorch emits
one NVTX range per operator (forward and backward)."""
import torch, torch.nn as nn
m = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024)).cuda()
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
x = torch.randn(64, 1024, device="cuda")
with torch.autograd.profiler.emit_nvtx():
    for i in range(5):
        torch.cuda.nvtx.range_push(f"step_{i}")
        opt.zero_grad(); m(x).square().mean().backward(); opt.step()
        torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("emit_nvtx: OK")
