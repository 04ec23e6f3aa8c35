#!/usr/bin/env python3
"""What other compression of the same packed payloads would save, measured on real traces.

    python3 bench/trace_codecs.py TRACE... [--zstd-levels 1,3,19]

For each trace (format 2.x), every block's packed payload (docs/FORMAT.md, "Packed payload") is
taken as the file holds it (LZ4-decoded), then compressed again in other ways, block by block as
the writer does, and the bytes are reported per kernel (packed Kernel records, tag 10: every
kernel unless a file has more than 65,536 launch configurations, when later ones go verbatim):

  lz4 block      LZ4_compress_default over the whole payload: what the file holds (checked)
  lz4 columns    each column compressed on its own (its raw bytes if that is smaller), 2 bytes of
                 length each
  zstd-N block   ZSTD_compress at level N over the whole payload (frame header included)
  zstd-N columns each column on its own with zstd (or raw if smaller), 2 bytes of length each

It also estimates how small the four time columns could get with an entropy coder: each value
(the column's varint) as its bit length and next two bits, coded at their empirical entropy over
the file, plus the remaining low bits raw ("time columns, modelled").

Block headers (24 bytes each) and the file header are added to every figure, so "lz4 block" is
the file's size. Needs the runtime libraries liblz4.so.1 and libzstd.so.1 (Debian: liblz4-1,
libzstd1) and nothing else; the column layout is read as trace/codec.cpp writes it.
"""
import argparse
import ctypes
import math
import os
import struct
import sys

COLUMNS = ("tag verbatim corr thread stream device api flags result cpu_begin cpu_dur gpu_start "
           "gpu_dur config bytes handle small").split()
BLOCK_MAGIC = 0x4B4C4243
KERNEL_TAG = 10

lz4 = ctypes.CDLL("liblz4.so.1")
zstd = ctypes.CDLL("libzstd.so.1")
lz4.LZ4_compressBound.restype = ctypes.c_int
zstd.ZSTD_compressBound.restype = ctypes.c_size_t
zstd.ZSTD_compress.restype = ctypes.c_size_t
zstd.ZSTD_compress.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
zstd.ZSTD_isError.argtypes = (ctypes.c_size_t,)


def lz4_size(data):
    if not data:
        return 0
    bound = lz4.LZ4_compressBound(len(data))
    out = ctypes.create_string_buffer(bound)
    n = lz4.LZ4_compress_default(data, out, len(data), bound)
    if n <= 0:
        sys.exit("LZ4_compress_default failed")
    return n


def lz4_decode(data, raw_size):
    out = ctypes.create_string_buffer(raw_size)
    n = lz4.LZ4_decompress_safe(data, out, len(data), raw_size)
    if n != raw_size:
        raise ValueError("LZ4 block does not decode to its raw_size")
    return out.raw


def zstd_size(data, level):
    if not data:
        return 0
    bound = zstd.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(bound)
    n = zstd.ZSTD_compress(out, bound, data, len(data), level)
    if zstd.ZSTD_isError(n):
        sys.exit("ZSTD_compress failed")
    return n


def varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return v, i


def blocks(path):
    """The packed payload of every block of a 2.x trace, and the file's size."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"CUTRACE\0":
        sys.exit(f"{path}: not a cutrace trace")
    major, _minor, header_size = struct.unpack_from("<HHI", data, 8)
    if major != 2:
        sys.exit(f"{path}: format {major}.x; this measures packed payloads (2.x)")
    off, payloads = header_size, []
    while off + 24 <= len(data):
        magic, csize, rsize = struct.unpack_from("<III", data, off)
        if magic != BLOCK_MAGIC or off + 24 + csize > len(data):
            break  # a truncated or damaged tail: what came before is measured
        payloads.append(lz4_decode(data[off + 24:off + 24 + csize], rsize))
        off += 24 + csize
    return payloads, len(data), header_size


def columns(payload):
    i = 0
    n, i = varint(payload, i)
    lens = []
    for _ in range(n):
        length, i = varint(payload, i)
        lens.append(length)
    cols = []
    for length in lens:
        cols.append(payload[i:i + length])
        i += length
    return i - sum(lens), cols  # bytes of the column table, columns


TIME_COLUMNS = ("cpu_begin", "cpu_dur", "gpu_start", "gpu_dur")


def values(col):
    out, i = [], 0
    while i < len(col):
        v, i = varint(col, i)
        out.append(v)
    return out


def modelled_bytes(vals):
    """Bytes for `vals` coded as (bit length, next 2 bits) at their entropy, low bits raw."""
    if not vals:
        return 0.0
    counts = {}
    raw_bits = 0
    for v in vals:
        n = v.bit_length()
        key = (n, v >> max(0, n - 3))
        counts[key] = counts.get(key, 0) + 1
        raw_bits += max(0, n - 3)
    total = len(vals)
    entropy = -sum(c * math.log2(c / total) for c in counts.values())
    return (entropy + raw_bits) / 8


def measure(path, levels):
    payloads, file_bytes, header = blocks(path)
    kernels = 0
    total = {"lz4 block": 0, "lz4 columns": 0}
    for lv in levels:
        total[f"zstd-{lv} block"] = total[f"zstd-{lv} columns"] = 0
    per_col = {name: 0 for name in COLUMNS}
    time_values = {name: [] for name in TIME_COLUMNS}
    for p in payloads:
        table, cols = columns(p)
        for name, c in zip(COLUMNS, cols):
            if name in time_values:
                time_values[name] += values(c)
        kernels += cols[0].count(bytes([KERNEL_TAG])) if cols else 0
        total["lz4 block"] += lz4_size(p) + 24
        total["lz4 columns"] += 24 + table + sum(min(lz4_size(c), len(c)) + 2 for c in cols)
        for lv in levels:
            total[f"zstd-{lv} block"] += zstd_size(p, lv) + 24
            sizes = [min(zstd_size(c, lv), len(c)) for c in cols]
            total[f"zstd-{lv} columns"] += 24 + table + sum(s + 2 for s in sizes)
            if lv == levels[-1]:
                for name, s in zip(COLUMNS, sizes):
                    per_col[name] += s
    for k in total:
        total[k] += header
    print(f"{path}: {len(payloads)} blocks, {kernels} packed kernels, {file_bytes} bytes on disk "
          f"({file_bytes / max(kernels, 1):.2f} B/kernel)")
    if total["lz4 block"] != file_bytes:
        print(f"  note: LZ4 here gives {total['lz4 block']} bytes, the file holds {file_bytes} "
              "(another LZ4 version, or a damaged tail)")
    for k, v in total.items():
        print(f"  {k:18s} {v:10d} bytes  {v / max(kernels, 1):6.2f} B/kernel")
    modelled = {name: modelled_bytes(v) / max(kernels, 1) for name, v in time_values.items()}
    print(f"  time columns, modelled: {sum(modelled.values()):.2f} B/kernel (" +
          ", ".join(f"{n} {b:.2f}" for n, b in modelled.items()) + ")")
    top = sorted(per_col.items(), key=lambda kv: -kv[1])[:6]
    print(f"  largest columns with zstd-{levels[-1]}: " +
          ", ".join(f"{n} {s / max(kernels, 1):.2f}" for n, s in top))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--zstd-levels", default="1,19", help="comma-separated zstd levels (default 1,19)")
    a = ap.parse_args()
    levels = [int(x) for x in a.zstd_levels.split(",") if x]
    for t in a.traces:
        if not os.path.isfile(t):
            sys.exit(f"{t}: no such file")
        measure(t, levels)


if __name__ == "__main__":
    main()
