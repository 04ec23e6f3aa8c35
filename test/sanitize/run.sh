#!/usr/bin/env bash
# Runs the whole test suite (unit + e2e) on a sanitizer build; `make sanitize` builds it first:
#   bash test/sanitize/run.sh tsan|asan BUILD_DIR [E2E_TEST ...]
# Every sanitizer report of every process (the CLI, the shim inside the test programs, the fake
# driver, the unit tests) goes to a file under BUILD_DIR/sanitizer-reports/; the run fails if any
# test fails or if any report was written. The runtime is preloaded ahead of the shim in the
# processes the e2e tests start (the shim is LD_PRELOADed, also into sh and python, which are not
# built with the sanitizer), and the stress load is cut to a tenth (CUTRACE_TEST_STRESS_SCALE).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kind=${1:?usage: run.sh tsan|asan BUILD_DIR [E2E_TEST ...]}
build=${2:?usage: run.sh tsan|asan BUILD_DIR [E2E_TEST ...]}
shift 2
cxx=${CXX:-g++}
runtime() { readlink -f "$($cxx -print-file-name="$1")"; }
reports=$(cd "$build" && pwd)/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
case $kind in
  tsan)
    export CUTRACE_TEST_SAN_PRELOAD=$(runtime libtsan.so)
    export TSAN_OPTIONS="log_path=$reports/tsan suppressions=$here/tsan.supp second_deadlock_stack=1 history_size=4"
    export CUTRACE_TEST_TIME_SCALE=${CUTRACE_TEST_TIME_SCALE:-10}
    # TSan cannot follow a multi-threaded process through fork() without exec: the child dies
    # with "dup thread with used id" when the shim starts its collector thread there. The ASan
    # run covers that test.
    export CUTRACE_TEST_SKIP="fork_child_gets_own_file_parent_unharmed=TSan does not support threads after a multi-threaded fork"
    ;;
  asan)
    export CUTRACE_TEST_SAN_PRELOAD=$(runtime libasan.so):$(runtime libubsan.so)
    # verify_asan_link_order=0: `cutrace record` puts the shim ahead of the preloaded runtime in
    # LD_PRELOAD; the runtime still comes before libc, which is what matters for interception.
    # intercept_tls_get_addr=0: GCC 12's runtime takes a dynamic TLS block that malloc placed 16
    # bytes into a page for a glibc 2.19 TLS header and reads the two words before it (the
    # allocator's chunk header) as a range to scan; LeakSanitizer's tracer then faults at exit
    # ("Tracer caught signal 11" in ScanRangeForPointers, addresses 0x380-0x3b0: google/sanitizers
    # #1322, fixed after GCC 13). Dynamic TLS blocks are then not scanned for pointers.
    export ASAN_OPTIONS="log_path=$reports/asan verify_asan_link_order=0 detect_leaks=1 strict_string_checks=1 check_initialization_order=1 detect_stack_use_after_return=1 intercept_tls_get_addr=0"
    export LSAN_OPTIONS="suppressions=$here/lsan.supp print_suppressions=0"
    export UBSAN_OPTIONS="log_path=$reports/ubsan print_stacktrace=1 halt_on_error=1"
    export CUTRACE_TEST_TIME_SCALE=${CUTRACE_TEST_TIME_SCALE:-4}
    # GCC 12's ASan runtime does not take its allocator's locks around fork(): a child of a
    # multi-threaded process can block forever on a size-class lock that another thread of the
    # parent held at the fork (seen once in five CI runs: the child's new collector thread stuck in
    # SizeClassAllocator64::GetFromAllocator, called from pthread_getattr_np's free()). glibc's
    # malloc does take its locks; the plain build runs the test.
    export CUTRACE_TEST_SKIP="fork_child_gets_own_file_parent_unharmed=GCC 12's ASan allocator can deadlock a child forked from a multi-threaded process"
    ;;
  *) echo "run.sh: unknown sanitizer '$kind' (tsan or asan)" >&2; exit 2 ;;
esac
export CUTRACE_TEST_STRESS_SCALE=${CUTRACE_TEST_STRESS_SCALE:-0.1}
status=0
if (($# == 0)); then
  echo "sanitize ($kind): unit tests"
  "$build/test/unit_tests" || status=1
fi
echo "sanitize ($kind): e2e tests"
BUILD=$build bash "$here/../e2e/run.sh" "$@" || status=1
# A report is an error, a leak, undefined behaviour or a race; LSan's note "Running thread ... was
# not suspended. False leaks are possible." (a thread exiting while LSan stops the world) is not.
if compgen -G "$reports/*" >/dev/null; then
  found=$(grep -lE "ERROR|runtime error|ThreadSanitizer" "$reports"/* || true)
  for f in "$reports"/*; do
    grep -qxF "$f" <<<"$found" || echo "sanitize ($kind): note: $(basename "$f"): $(head -c 200 "$f")"
  done
  if [[ -n $found ]]; then
    echo "sanitize ($kind): sanitizer reports:" >&2
    for f in $found; do echo "==== $f" >&2; head -n 60 "$f" >&2; done
    status=1
  fi
fi
((status == 0)) && echo "sanitize ($kind): clean"
exit $status
