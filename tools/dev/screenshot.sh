#!/usr/bin/env bash
# bash tools/dev/screenshot.sh REPORT.html OUTDIR [PREFIX]: screenshots of a `cutrace report`
# page in headless chromium: OUTDIR/[PREFIX-]dashboard.png (the whole dashboard) and
# OUTDIR/[PREFIX-]timeline.png (a kernel selected, with its launch arrow). Needs chromium and
# web/node_modules (make fetches them). E.g. for the README:
#   bash tools/dev/screenshot.sh gpt.html docs report-gpt   # docs/report-gpt-dashboard.png, ...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# == 2 || $# == 3 ]] || { echo "usage: bash tools/dev/screenshot.sh REPORT.html OUTDIR [PREFIX]" >&2; exit 2; }
[[ -d $root/web/node_modules/playwright-core ]] || (cd "$root/web" && npm ci --no-audit --no-fund)
exec node "$root/web/test/screenshot.mjs" "$@"
