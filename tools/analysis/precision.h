// Numeric precision of a kernel, inferred from its (demangled) name. docs/SUMMARY.md lists every
// rule with an example; test/unit/precision_test.cpp checks each of them.
//
// The name is searched for type words in this order, and the first class that matches wins, so
// that a kernel that reads bf16 and accumulates in float counts as bf16 and a float kernel with a
// double scalar argument counts as fp32:
//   1. library conventions that spell the type as a letter code: cuBLAS `nvjet_[smNN_]<a><c><d>_`
//      (first letter h fp16, t bf16, s fp32 / tf32 with `tf32`, d fp64, q/e fp8, i int8) and
//      CUTLASS `tensorop_<t><digits>` (h fp16, s tf32, d fp64, i int8);
//   2. fp8 (`e4m3`, `e5m2`, `fp8`, `float8`);     3. int8 (`int8`, `i8`, `imma`, `signed char`);
//   4. bf16 (`bfloat16`, `bf16`);                  5. fp16 (`half`, `fp16`, `f16`, `h884`, ...);
//   6. tf32 (`tf32`);                              7. fp32 (`float`, `fp32`, `f32`, `sgemm`, ...);
//   8. fp64 (`double`, `fp64`, `f64`, `dgemm`, ...);
//   9. int32 (`int32`, `i32`, `int` as the first template argument: `<int>`, `<int,`);
//      otherwise `other` (kernels on other integers, Triton/cuDNN names without a type word,
//      graph launches).
// Words match at word boundaries: `float` does not match inside `bfloat16`, `f32` not inside
// `tf32`, `int8` not inside `uint8`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cutrace {

enum class Precision : uint8_t { FP64, FP32, TF32, BF16, FP16, FP8, INT8, INT32, Other };
inline constexpr size_t kPrecisions = 9;

Precision kernel_precision(std::string_view name);
const char* precision_name(Precision p);  // "fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int32", "other"

}  // namespace cutrace
