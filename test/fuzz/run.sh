#!/usr/bin/env bash
# Runs the libFuzzer targets of build-fuzz/fuzz/ (built by `make fuzz`) as a regression check:
# every input of test/fuzz/corpus/ (valid traces from the fake driver, damaged copies of them,
# and every input a fuzzer found a bug with) once, then SECONDS of new fuzzing per target
# (default 0: the corpus only) into a scratch corpus that is thrown away.
#   BUILD=build-fuzz bash test/fuzz/run.sh [SECONDS] [TARGET ...]
# A long run of one target (what docs/RELIABILITY.md reports):
#   nice -n 10 build-fuzz/fuzz/fuzz_reader -max_total_time=600 NEW_DIR test/fuzz/corpus
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${BUILD:-build-fuzz}
secs=${1:-0}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in "$here"/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch
for t in "${targets[@]}"; do
  bin=$build/fuzz/$t
  [[ -x $bin ]] || { echo "fuzz: $bin is missing: build it with 'make fuzz'" >&2; exit 2; }
  echo "fuzz: $t: corpus ($(ls "$here/corpus" | wc -l) inputs)"
  # The target's own status decides (a sanitizer report exits non-zero; the report is printed).
  # (PIPESTATUS read after `| grep ... || true` is true's status: always 0.)
  rc=0
  "$bin" -runs=0 -close_fd_mask=3 -artifact_prefix="$scratch/" "$here/corpus" >"$scratch/$t.log" 2>&1 || rc=$?
  grep -E "INITED|Done|ERROR|SUMMARY" "$scratch/$t.log" || true
  if ((rc != 0)); then
    grep -A12 "runtime error\|ERROR:" "$scratch/$t.log" | head -40 >&2 || true
    echo "fuzz: $t fails on an input of the corpus (exit status $rc)" >&2
    exit 1
  fi
  if ((secs > 0)); then
    mkdir -p "$scratch/$t"
    echo "fuzz: $t: ${secs} s of new inputs"
    "$bin" -max_total_time="$secs" -close_fd_mask=3 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$scratch/" "$scratch/$t" "$here/corpus" 2>&1 | grep -E '^(stat::number_of_executed_units|Done)' || true
    # libFuzzer exits non-zero on a finding; pipefail reports it: keep the input for the report
    if ls "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* "$scratch"/oom-* >/dev/null 2>&1; then
      mkdir -p "$build/fuzz-findings"
      cp "$scratch"/crash-* "$scratch"/leak-* "$scratch"/timeout-* "$scratch"/oom-* "$build/fuzz-findings/" 2>/dev/null || true
      echo "fuzz: $t found a bug: inputs in $build/fuzz-findings/" >&2
      exit 1
    fi
  fi
done
echo "fuzz: all targets clean"
