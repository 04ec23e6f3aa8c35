// NVTX scalar payloads (trace::PayloadRec) as every tool writes them: "u64:18446744073709551615",
// "i32:-7", "f64:0.10000000000000001" (%.17g: a double reads back exactly), "f32:3.14159274" (%.9g).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include "trace/format.h"

namespace cutrace::tools {

inline const char* payload_type_name(uint8_t type) {
  static const char* const kNames[] = {"?", "u64", "i64", "f64", "u32", "i32", "f32"};
  return type <= trace::kPayloadTypeMax ? kNames[type] : "?";
}
inline bool payload_is_float(uint8_t type) {
  return type == uint8_t(trace::PayloadType::F64) || type == uint8_t(trace::PayloadType::F32);
}
inline double payload_double(const trace::PayloadRec& p) {
  const uint64_t bits = p.bits;
  if (p.type == uint8_t(trace::PayloadType::F32)) {
    uint32_t b = uint32_t(bits);
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
  }
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}
// The value alone, in the form above.
inline std::string payload_value(const trace::PayloadRec& p) {
  char b[40];
  const uint64_t bits = p.bits;
  switch (trace::PayloadType(p.type)) {
    case trace::PayloadType::U64:
    case trace::PayloadType::U32: std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(bits)); break;
    case trace::PayloadType::I64:
    case trace::PayloadType::I32: std::snprintf(b, sizeof b, "%lld", static_cast<long long>(bits)); break;
    case trace::PayloadType::F64: std::snprintf(b, sizeof b, "%.17g", payload_double(p)); break;
    case trace::PayloadType::F32: std::snprintf(b, sizeof b, "%.9g", payload_double(p)); break;
    default: std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(bits)); break;
  }
  return b;
}
inline std::string payload_text(const trace::PayloadRec& p) {
  return std::string(payload_type_name(p.type)) + ':' + payload_value(p);
}
// A JSON value: a number, or a string for a NaN or an infinity (JSON has no such number).
inline std::string payload_json(const trace::PayloadRec& p) {
  if (payload_is_float(p.type) && !std::isfinite(payload_double(p))) return '"' + payload_value(p) + '"';
  return payload_value(p);
}

}  // namespace cutrace::tools
