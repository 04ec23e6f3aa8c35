#!/usr/bin/env bash
# cutrace on JAX/XLA (one device call): bench/workloads/jax_loop.py (jit-compiled MLP training loop)
# with XLA's defaults (CUDA-graph command buffers) and with command buffers off. For each: a run
# without cutrace, jax.profiler's CUPTI view of the timed steps (the truth), cutrace recording the
# same steps (cutrace.start/stop, --capture-range manual); the losses with and without cutrace must
# be identical; bench/gpu/jax_compare.py compares the trace with the truth.
#   CUTRACE=... bash bench/gpu/jax_check.sh OUT [STEPS]
set -u
OUT=${1:-/tmp/cutrace-jax}; STEPS=${2:-20}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$H/../../python${PYTHONPATH:+:$PYTHONPATH}
for cfg in default nocb; do
  if [ $cfg = nocb ]; then export XLA_FLAGS=--xla_gpu_enable_command_buffer=; else unset XLA_FLAGS; fi
  echo; echo "=== $(date +%T) XLA $cfg (XLA_FLAGS=${XLA_FLAGS:-})"
  python3 "$H/../workloads/jax_loop.py" --steps "$STEPS" > "$OUT/$cfg.base.json"; tail -c 300 "$OUT/$cfg.base.json"
  python3 "$H/../workloads/jax_loop.py" --steps "$STEPS" --truth "$OUT/$cfg.truth" > "$OUT/$cfg.truth.json" 2> "$OUT/$cfg.truth.err" ||
    tail -5 "$OUT/$cfg.truth.err"
  $CT record -o "$OUT/$cfg.trace" --capture-range manual -- \
    python3 "$H/../workloads/jax_loop.py" --steps "$STEPS" --cutrace-window > "$OUT/$cfg.cutrace.json"
  tail -c 300 "$OUT/$cfg.cutrace.json"
  python3 - "$OUT/$cfg.base.json" "$OUT/$cfg.cutrace.json" <<'PY'
import json, sys
a, b = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
print("losses identical with and without cutrace:", a["losses"] == b["losses"], f"({len(a['losses'])} steps)")
PY
  python3 "$H/jax_compare.py" --cutrace "$CT" "$OUT/$cfg.trace" "$OUT/$cfg.truth"
  $CT summary "$OUT/$cfg.trace" --top 6 | head -40
done
