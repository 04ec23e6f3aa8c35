#!/usr/bin/env bash
# Browser tests of `cutrace report` (web/test/report_test.mjs) in headless chromium. `make test`
# runs them after building; this script builds nothing:
#   BUILD=build bash test/report/run.sh
# Skips LOUDLY when chromium or node is missing: exit 0 on a developer machine, 1 under CI=true
# (.ci/run installs them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${BUILD:-build}" && pwd)
skip() {
  echo "****************************************************************************" >&2
  echo "report browser tests SKIPPED: $*" >&2
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
for f in bin/cutrace test/report_trace_gen; do
  [[ -e $build/$f ]] || { echo "run.sh: $build/$f is missing: run 'make test'" >&2; exit 2; }
done
[[ -d $root/web/node_modules/playwright-core ]] || (cd "$root/web" && npm ci --no-audit --no-fund)
export CHROMIUM=$chromium CUTRACE_BUILD=$build
exec node --test --test-reporter=spec "$root/web/test/report_test.mjs"
