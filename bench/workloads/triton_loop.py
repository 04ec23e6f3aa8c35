#!/usr/bin/env python3
"""Triton kernel loop: N launches of a Triton kernel (Triton resolves cuLaunchKernelEx with dlsym)."""
import argparse, json, torch, triton, triton.language as tl

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)

ap = argparse.ArgumentParser(); ap.add_argument("--n", type=int, default=1000); a = ap.parse_args()
x = torch.zeros(1 << 16, device="cuda")
grid = (triton.cdiv(x.numel(), 1024),)
for _ in range(a.n): add_one[grid](x, x.numel(), BLOCK=1024)
torch.cuda.synchronize()
print(json.dumps({"triton_launches": a.n, "value": float(x[0])}), flush=True)
