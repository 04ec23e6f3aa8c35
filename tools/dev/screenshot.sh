#!/usr/bin/env bash
# bash tools/dev/screenshot.sh REPORT.html OUTDIR: screenshots of a `cutrace report` page in
# headless chromium: OUTDIR/dashboard.png (whole page) and OUTDIR/timeline.png (a kernel selected,
# with its launch arrow). Needs chromium and web/node_modules (make fetches them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# == 2 ]] || { echo "usage: bash tools/dev/screenshot.sh REPORT.html OUTDIR" >&2; exit 2; }
[[ -d $root/web/node_modules/playwright-core ]] || (cd "$root/web" && npm ci --no-audit --no-fund)
exec node "$root/web/test/screenshot.mjs" "$1" "$2"
