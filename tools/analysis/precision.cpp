#include "tools/analysis/precision.h"

#include <string>

namespace cutrace {
namespace {

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

// How a word may touch its neighbours.
enum Bound : uint8_t {
  kAny = 0,           // anywhere
  kLeftNoAlpha = 1,   // not preceded by a letter ("f32" but not "tf32", "int8" but not "uint8")
  kRightNoAlpha = 2,  // not followed by a letter ("float" but not "floatx")
  kRightNoDigit = 4,  // not followed by a digit ("f16" but not "f160", "i8" but not "i80")
};

struct Word {
  const char* text;  // lower case
  uint8_t bounds;
};

bool contains(const std::string& s, const Word& w) {
  std::string_view word(w.text);
  for (size_t p = s.find(word); p != std::string::npos; p = s.find(word, p + 1)) {
    size_t q = p + word.size();
    if ((w.bounds & kLeftNoAlpha) && p > 0 && is_alpha(s[p - 1])) continue;
    if ((w.bounds & kRightNoAlpha) && q < s.size() && is_alpha(s[q])) continue;
    if ((w.bounds & kRightNoDigit) && q < s.size() && is_digit(s[q])) continue;
    return true;
  }
  return false;
}

constexpr uint8_t kCode = kLeftNoAlpha | kRightNoDigit;  // short codes: f16, bf16, i8, ...
constexpr uint8_t kName = kLeftNoAlpha | kRightNoAlpha;  // C++ type names: float, half, ...

struct Rule {
  Precision precision;
  Word words[8];
};

// Checked in this order; the first class with a matching word wins (see precision.h).
const Rule kRules[] = {
    {Precision::FP8, {{"e4m3", kAny}, {"e5m2", kAny}, {"fp8", kCode}, {"float8", kLeftNoAlpha}}},
    {Precision::INT8,
     {{"int8", kCode},
      {"qint8", kCode},
      {"i8", kCode},
      {"imma", kLeftNoAlpha},
      {"igemm", kLeftNoAlpha},
      {"signed char", kLeftNoAlpha}}},
    {Precision::BF16, {{"bfloat16", kAny}, {"bf16", kCode}}},
    {Precision::FP16,
     {{"half", kName},
      {"fp16", kCode},
      {"f16", kCode},
      {"h884", kLeftNoAlpha},
      {"h1688", kLeftNoAlpha},
      {"h16816", kLeftNoAlpha},
      {"hgemm", kLeftNoAlpha},
      {"hmma", kLeftNoAlpha}}},
    {Precision::TF32, {{"tf32", kCode}}},
    {Precision::FP32,
     {{"float", kName}, {"fp32", kCode}, {"f32", kCode}, {"sgemm", kLeftNoAlpha}, {"sgemv", kLeftNoAlpha}}},
    {Precision::FP64,
     {{"double", kName},
      {"fp64", kCode},
      {"f64", kCode},
      {"dgemm", kLeftNoAlpha},
      {"dgemv", kLeftNoAlpha},
      {"dmma", kLeftNoAlpha}}},
    // Last: an int index or size argument beside a floating-point type is not the data type.
    {Precision::INT32, {{"int32", kCode}, {"i32", kCode}, {"<int>", kAny}, {"<int,", kAny}}},
};

// cuBLAS nvjet kernels: nvjet_[smNN_]<type code>_<tile>..., the code's letters being the types of
// A/B, compute and D, e.g. tst (bf16), hsh (fp16), sss (fp32; sss_tf32: tf32), qqtst (fp8).
// The `_h_`/`_v_` after the cluster shape and `bz` are launch options, not types.
bool nvjet(const std::string& s, Precision* p) {
  if (s.compare(0, 6, "nvjet_") != 0) return false;
  size_t i = 6;
  if (s.compare(i, 2, "sm") == 0 && i + 2 < s.size() && is_digit(s[i + 2])) {
    size_t u = s.find('_', i);
    if (u == std::string::npos) return false;
    i = u + 1;
  }
  if (i >= s.size() || !is_alpha(s[i])) return false;
  switch (s[i]) {
    case 'q': *p = Precision::FP8; return true;
    case 'h': *p = Precision::FP16; return true;
    case 't': *p = Precision::BF16; return true;
    case 's': *p = contains(s, {"tf32", kCode}) ? Precision::TF32 : Precision::FP32; return true;
    case 'd': *p = Precision::FP64; return true;
    case 'i': *p = Precision::INT8; return true;
    default: return false;
  }
}

// CUTLASS 2.x kernel names: cutlass_<arch>_tensorop_<type letter><mma shape>gemm_..., e.g.
// tensorop_s1688gemm (fp32 data on tensor cores: tf32), tensorop_h16816gemm, tensorop_d884gemm,
// tensorop_i16832gemm. bf16 and fp8 variants spell their type (tensorop_bf16_s16816gemm_bf16).
bool cutlass_tensorop(const std::string& s, Precision* p) {
  size_t k = s.find("tensorop_");
  if (k == std::string::npos) return false;
  k += 9;
  if (k + 1 >= s.size() || !is_digit(s[k + 1])) return false;
  switch (s[k]) {
    case 'h': *p = Precision::FP16; return true;
    case 's': *p = Precision::TF32; return true;
    case 'd': *p = Precision::FP64; return true;
    case 'i': *p = Precision::INT8; return true;
    default: return false;
  }
}

}  // namespace

Precision kernel_precision(std::string_view name) {
  std::string s(name.size(), '\0');
  for (size_t i = 0; i < name.size(); ++i) s[i] = lower(name[i]);
  Precision p;
  if (nvjet(s, &p) || cutlass_tensorop(s, &p)) return p;
  for (const Rule& r : kRules) {
    for (const Word& w : r.words) {
      if (w.text && contains(s, w)) return r.precision;
    }
  }
  return Precision::Other;
}

const char* precision_name(Precision p) {
  static const char* const names[] = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int32", "other"};
  size_t i = size_t(p);
  return i < kPrecisions ? names[i] : "other";
}

}  // namespace cutrace
