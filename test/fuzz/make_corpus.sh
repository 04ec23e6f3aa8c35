#!/usr/bin/env bash
# Regenerates the seed traces of test/fuzz/corpus/ (committed; this script documents where they
# come from): small traces of the e2e programs on the fake driver, and damaged copies of one.
# Inputs a fuzzer found a bug with are kept in the corpus as regress-<bug> (resealed with
# test/fuzz/tools/reseal.cpp, each read by test/unit/fuzz_regression_test.cpp) and are not
# touched here.
#   make test && BUILD=build bash test/fuzz/make_corpus.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${BUILD:-build}" && pwd)
corpus=$here/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH=$build/test/fake_cuda CUTRACE_SAMPLE_HZ=0
record() {  # record NAME PROG [ARG...]: one trace of the program, copied to corpus/seed-NAME
  local name=$1
  shift
  mkdir -p "$tmp/$name"
  CUTRACE_OUTPUT=$tmp/$name LD_PRELOAD=$build/lib/libcutrace.so "$build/test/e2e/$1" "${@:2}" >/dev/null
  cp "$(ls "$tmp/$name"/*.cutrace | head -n 1)" "$corpus/seed-$name"
}
mkdir -p "$corpus"
record sample sample_app
record nvtx nvtx_app
record copies copies
record routes routes
record window window_app
record threads fault_app threads 4 100
record many fault_app many 600
# Call stacks of every sync and launch (Module, Stack and OpStack records).
CUTRACE_BACKTRACE=all record stacks sync_sites
# The trace of a SIGTERM'd process (End flags = signal) and of a killed one (no End record).
mkdir -p "$tmp/term"
CUTRACE_OUTPUT=$tmp/term LD_PRELOAD=$build/lib/libcutrace.so "$build/test/e2e/fault_app" wait 50 >/dev/null &
sleep 1 && kill -TERM $! && wait $! || true
cp "$(ls "$tmp/term"/*.cutrace | head -n 1)" "$corpus/seed-sigterm"
# Valid traces with hostile contents (test/craft/craft_trace.cpp): ids and times at their
# extremes, kernels on stream id 2^30, names holding terminal escapes.
"$build/test/craft_trace" "$corpus/crafted-extreme" extreme
"$build/test/craft_trace" "$corpus/crafted-stream-2-30" stream 1073741824
"$build/test/craft_trace" "$corpus/crafted-hostile-names" names
# Damaged copies of the copies trace (python3: byte-exact edits).
python3 - "$corpus" <<'PY'
import os, struct, sys
d = sys.argv[1]
t = open(os.path.join(d, "seed-copies"), "rb").read()
def put(name, data):
    open(os.path.join(d, "seed-" + name), "wb").write(data)
hs = struct.unpack_from("<I", t, 12)[0]          # FileHeader.header_size
blk = t.find(b"CBLK", hs)                        # first block frame
put("cut-mid-block", t[: len(t) - 7])
put("cut-after-header", t[:hs])
put("flipped-checksum", t[:blk + 12] + bytes([t[blk + 12] ^ 0xFF]) + t[blk + 13:])
put("flipped-payload", t[:blk + 40] + bytes([t[blk + 40] ^ 0x55]) + t[blk + 41:])
put("future-version", t[:8] + struct.pack("<H", 9) + t[10:])
put("garbage-between-blocks", t[:blk] + b"CBLK" + b"\x00" * 20 + t[blk:])
put("empty", b"")
put("text", b"kernel k 1000\n" * 20)
PY
ls -l "$corpus" | awk '{s += $5} END {print "corpus: " NR - 1 " files, " s " bytes"}'
