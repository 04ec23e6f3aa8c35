#!/usr/bin/env python3
"""A JAX training loop (jit-compiled MLP, SGD) for checking cutrace on JAX/XLA on the GPU machine.
Prints one JSON line: the losses of the timed steps (exact float reprs: runs with and without
cutrace must print the same), the median step time.
  python3 bench/workloads/jax_loop.py [--steps 20] [--truth DIR] [--cutrace-window]
--truth DIR: jax.profiler traces the timed steps (CUPTI) and writes a Perfetto JSON under DIR
  (bench/gpu/jax_compare.py reads it).
--cutrace-window: cutrace.start()/stop() around the timed steps (record with
  --capture-range manual and PYTHONPATH=python), so that the trace holds the same steps."""
import argparse, json, statistics, time

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--warmup", type=int, default=5)
ap.add_argument("--dim", type=int, default=2048)
ap.add_argument("--layers", type=int, default=8)
ap.add_argument("--batch", type=int, default=512)
ap.add_argument("--truth")
ap.add_argument("--cutrace-window", action="store_true")
a = ap.parse_args()

import jax
import jax.numpy as jnp


def init(key):
    params = []
    for _ in range(a.layers):
        key, k1 = jax.random.split(key)
        params.append((jax.random.normal(k1, (a.dim, a.dim), jnp.float32) / jnp.sqrt(a.dim),
                       jnp.zeros((a.dim,), jnp.float32)))
    return params


def forward(params, x):
    for w, b in params:
        h = x @ w + b
        h = (h - h.mean(-1, keepdims=True)) / jnp.sqrt(h.var(-1, keepdims=True) + 1e-5)
        x = x + jax.nn.gelu(h)
    return x


def loss_fn(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [(w - 1e-3 * gw, b - 1e-3 * gb) for (w, b), (gw, gb) in zip(params, grads)], loss


key = jax.random.PRNGKey(0)
params = init(key)
kx, ky = jax.random.split(jax.random.PRNGKey(1))
x = jax.random.normal(kx, (a.batch, a.dim), jnp.float32)
y = jax.random.normal(ky, (a.batch, a.dim), jnp.float32)
for _ in range(a.warmup):
    params, loss = train_step(params, x, y)
    loss.block_until_ready()


def timed():
    losses, ms = [], []
    global params
    for _ in range(a.steps):
        t0 = time.perf_counter()
        params, loss = train_step(params, x, y)
        loss.block_until_ready()
        ms.append((time.perf_counter() - t0) * 1e3)
        losses.append(float(loss))
    return losses, ms


if a.truth:
    with jax.profiler.trace(a.truth, create_perfetto_trace=True):
        losses, ms = timed()
elif a.cutrace_window:
    import cutrace
    cutrace.start()
    losses, ms = timed()
    cutrace.stop()
else:
    losses, ms = timed()
print(json.dumps({"jax": jax.__version__, "backend": jax.default_backend(), "steps": a.steps,
                  "step_ms": statistics.median(ms), "losses": [repr(v) for v in losses]}))
