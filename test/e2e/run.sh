#!/usr/bin/env bash
# End-to-end tests on the fake CUDA driver. `make test` builds everything, then runs
#   BUILD=build bash test/e2e/run.sh [TEST_NAME ...]
# This script builds nothing: it finds the binaries under $BUILD, puts the fake driver first on
# LD_LIBRARY_PATH and hands over to check.py, which runs and checks every scenario.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${BUILD:-build}
for f in bin/cutrace lib/libcutrace.so test/fake_cuda/libcuda.so.1 test/fake_cupti/libcupti.so test/fake_nvml/libnvidia-ml.so.1 \
         test/e2e/routes test/e2e/threads test/e2e/copies test/e2e/exit_code test/e2e/ddp_app test/libdisk_full.so test/libclock_shift.so; do
  if [[ ! -e $build/$f ]]; then
    echo "run.sh: $build/$f is missing: build it with 'make test' (or make BUILD=$build test)" >&2
    exit 2
  fi
done
build=$(cd "$build" && pwd)
export LD_LIBRARY_PATH="$build/test/fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec python3 "$here/check.py" --build "$build" "$@"
