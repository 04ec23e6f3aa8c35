#!/usr/bin/env python3
"""A small training loop that is deterministic on the GPU by construction, for
bench/gpu/same_loss.sh (issue 7: the application's results are bit-identical under cutrace).

train_gpt.py is not: some of its kernels stay nondeterministic even with deterministic
algorithms requested (BENCHMARKS.md), so equal losses there cannot be expected even without
cutrace. This loop uses only operations that PyTorch can run deterministically, with
`torch.use_deterministic_algorithms(True)` strict (an operation without a deterministic
implementation raises instead of running), a fixed seed and data generated on the CPU:
embedding, linear layers, GELU, LayerNorm, cross-entropy and AdamW, forward and backward, in
NVTX-annotated steps. It prints the loss of every step with repr() (every digit of the float),
so two runs can be compared line by line.

    CUBLAS_WORKSPACE_CONFIG=:4096:8 python3 bench/workloads/det_train.py [--steps 50] [--seed 1]
"""
import argparse
import os

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--width", type=int, default=1024)
    a = ap.parse_args()
    if os.environ.get("CUBLAS_WORKSPACE_CONFIG") is None:
        raise SystemExit("set CUBLAS_WORKSPACE_CONFIG=:4096:8 (cuBLAS is deterministic only with it)")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(a.seed)
    dev = torch.device("cuda")
    vocab, seq, batch, w = 4096, 128, 16, a.width
    model = torch.nn.Sequential(
        torch.nn.Embedding(vocab, w),
        torch.nn.LayerNorm(w), torch.nn.Linear(w, 4 * w), torch.nn.GELU(), torch.nn.Linear(4 * w, w),
        torch.nn.LayerNorm(w), torch.nn.Linear(w, 4 * w), torch.nn.GELU(), torch.nn.Linear(4 * w, w),
        torch.nn.LayerNorm(w), torch.nn.Linear(w, vocab),
    ).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    gen = torch.Generator().manual_seed(a.seed)  # data from the CPU generator: same every run
    for step in range(a.steps):
        torch.cuda.nvtx.range_push("step_%d" % step)
        x = torch.randint(0, vocab, (batch, seq), generator=gen).to(dev)
        y = torch.randint(0, vocab, (batch, seq), generator=gen).to(dev)
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.view(-1, vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
        print("step %d loss %r" % (step, loss.item()), flush=True)
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    print("parameters checksum %r" % checksum, flush=True)


if __name__ == "__main__":
    main()
