#!/usr/bin/env bash
# Browser tests in headless chromium: web/test/<SUITE>_test.mjs, SUITE = report (`cutrace report`'s
# page), serve (`cutrace serve`'s pages) or diff (`cutrace diff --html`'s page). `make test` runs
# all three after building; this script builds nothing:
#   BUILD=build bash test/browser/run.sh report|serve|diff
# Skips LOUDLY when chromium or node is missing: exit 0 on a developer machine, 1 under CI=true
# (.ci/run installs them).
set -euo pipefail
suite=${1:?usage: bash test/browser/run.sh report|serve|diff}
case $suite in
  report) needs=(bin/cutrace lib/libcutrace.so test/report_trace_gen test/e2e/paced_launches test/e2e/nvtx_app test/e2e/launch_loop test/e2e/sync_sites) ;;
  serve) needs=(bin/cutrace lib/libcutrace.so test/e2e/fault_app test/e2e/hostile_names) ;;
  diff) needs=(bin/cutrace lib/libcutrace.so test/e2e/diff_app) ;;
  *) echo "run.sh: unknown suite '$suite' (report|serve|diff)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${BUILD:-build}" && pwd)
skip() {
  echo "****************************************************************************" >&2
  echo "$suite browser tests SKIPPED: $*" >&2
  echo "install them: apt-get install -y nodejs npm chromium (bash .ci/run --deps-only)" >&2
  echo "****************************************************************************" >&2
  [[ ${CI:-} == true ]] && exit 1
  exit 0
}
command -v node >/dev/null || skip "node is not installed"
chromium=""
for c in "${CHROMIUM:-}" /usr/lib/chromium/chromium /usr/bin/chromium /usr/bin/chromium-browser; do
  [[ -n $c && -x $c ]] && { chromium=$c; break; }
done
[[ -n $chromium ]] || skip "no chromium found (set CHROMIUM=/path/to/chromium)"
for f in "${needs[@]}"; do
  [[ -e $build/$f ]] || { echo "run.sh: $build/$f is missing: run 'make test'" >&2; exit 2; }
done
[[ -d $root/web/node_modules/playwright-core ]] || (cd "$root/web" && npm ci --no-audit --no-fund)
export CHROMIUM=$chromium CUTRACE_BUILD=$build
exec node --test --test-reporter=spec "$root/web/test/${suite}_test.mjs"
