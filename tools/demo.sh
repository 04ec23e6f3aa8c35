#!/usr/bin/env bash
# `make demo`: records the bundled sample training loop (test/e2e/sample_app) into
# $BUILD/demo-trace, prints its summary and writes its HTML report ($BUILD/demo-report.html).
# Uses the real CUDA driver when nvidia-smi works, the fake driver of the tests otherwise. make
# builds everything first.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${BUILD:-build}
out=$build/demo-trace
app=$build/test/e2e/sample_app
for f in "$build/bin/cutrace" "$build/lib/libcutrace.so" "$app"; do
  [[ -e $f ]] || { echo "demo: $f is missing: run 'make demo'" >&2; exit 2; }
done

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  echo "demo: GPU found (nvidia-smi works): using the installed CUDA driver"
else
  fake=$(cd "$build/test/fake_cuda" && pwd)
  echo "demo: no working nvidia-smi: using the fake CUDA driver in $fake (simulated GPU times)"
  export LD_LIBRARY_PATH="$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

rm -rf "$out"
"$build/bin/cutrace" record -o "$out" -- "$app"
echo
"$build/bin/cutrace" summary "$out"
echo
for f in "$out"/*.cutrace; do
  echo "demo: trace written to $f"
  echo "demo: every record: $build/bin/cutrace dump $f | less"
done
"$build/bin/cutrace" report "$out" -o "$build/demo-report.html" -q
echo "demo: HTML report (dashboard and timeline): $build/demo-report.html"
