#!/usr/bin/env bash
# ns per Python call stack read by the shim at Python depths 10 and 30, under each interpreter
# given (default: python3): bench/py_stack_cost.sh [PYTHON ...]. Builds build/bench/py_stack_cost.so
# from shim/py_stack.cpp and the runtime sources it needs (no libpython linked).
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench/py_stack_cost.so
mkdir -p build/bench
g++ -O2 -std=c++17 -fPIC -shared -I. -fvisibility=hidden -o "$out" bench/py_stack_cost.cpp shim/py_stack.cpp \
  runtime/py_layout.cpp runtime/config.cpp runtime/gpu_sample.cpp
for py in "${@:-python3}"; do
  "$py" bench/py_stack_cost.py "$out"
done
