#!/usr/bin/env bash
# Are JAX's losses the same with and without cutrace? bench/workloads/jax_loop.py run several times:
# without cutrace, under `cutrace record` (whole process, and a manual window), with the shim
# preloaded but disabled (CUTRACE_DISABLE=1), and the same with XLA's autotuning off
# (--xla_gpu_autotune_level=0: XLA then does not pick kernels by timing them). Prints one line per
# run: a digest of its losses and the last loss.
#   CUTRACE=... bash bench/gpu/jax_same_loss.sh OUT [STEPS]
set -u
OUT=${1:-/tmp/cutrace-jax-loss}; STEPS=${2:-20}
CT=${CUTRACE:-$PWD/build/bin/cutrace}
H=$(cd "$(dirname "$0")" && pwd)
SHIM=$(dirname "$CT")/../lib/libcutrace.so
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$H/../../python${PYTHONPATH:+:$PYTHONPATH}
digest() { python3 -c 'import json,sys,hashlib; j=json.loads(sys.stdin.read().strip().splitlines()[-1]); l=j["losses"]; print(hashlib.sha1(" ".join(l).encode()).hexdigest()[:12], l[-1], "%.2f ms" % j["step_ms"])'; }
run() {  # name, command...
  local name=$1; shift
  printf '%-28s ' "$name"; "$@" 2> "$OUT/$name.err" | digest
}
for flags in "" "--xla_gpu_autotune_level=0"; do
  export XLA_FLAGS=$flags
  echo; echo "=== XLA_FLAGS=$flags"
  tag=${flags:+noautotune.}
  run ${tag}base1 python3 "$H/../workloads/jax_loop.py" --steps "$STEPS"
  run ${tag}record "$CT" record -o "$OUT/${tag}rec" -- python3 "$H/../workloads/jax_loop.py" --steps "$STEPS"
  run ${tag}base2 python3 "$H/../workloads/jax_loop.py" --steps "$STEPS"
  run ${tag}record-window "$CT" record -o "$OUT/${tag}win" --capture-range manual -- python3 "$H/../workloads/jax_loop.py" --steps "$STEPS" --cutrace-window
  run ${tag}preload-disabled env LD_PRELOAD="$SHIM" CUTRACE_DISABLE=1 python3 "$H/../workloads/jax_loop.py" --steps "$STEPS"
  run ${tag}record-none "$CT" record -o "$OUT/${tag}none" --gpu-timing none -- python3 "$H/../workloads/jax_loop.py" --steps "$STEPS"
  run ${tag}base3 python3 "$H/../workloads/jax_loop.py" --steps "$STEPS"
done
