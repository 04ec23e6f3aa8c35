// Protobuf wire-format writers for the Perfetto export (tools/export/perfetto.cpp): varints,
// keys and length-delimited fields, appended to a std::string or written through a pointer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace cutrace {

namespace pb {
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2 };

// Pointer writers: the hot paths assemble a field or a packet header in a small stack buffer
// and append it at once.
inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}
inline size_t key_size(uint32_t field) { return varint_size(uint64_t(field) << 3); }
inline char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = char(v | 0x80);
    v >>= 7;
  }
  *p++ = char(v);
  return p;
}
inline char* put_key(char* p, uint32_t field, Wire w) { return put_varint(p, (uint64_t(field) << 3) | w); }
inline char* put_u64(char* p, uint32_t field, uint64_t v) { return put_varint(put_key(p, field, kVarint), v); }
inline char* put_fixed64(char* p, uint32_t field, uint64_t v) {
  p = put_key(p, field, kFixed64);
  for (int i = 0; i < 8; ++i) *p++ = char(v >> (8 * i));
  return p;
}

// std::string writers, for the rest.
inline void varint(std::string& o, uint64_t v) {
  char b[10];
  o.append(b, size_t(put_varint(b, v) - b));
}
inline void key(std::string& o, uint32_t field, Wire w) { varint(o, (uint64_t(field) << 3) | w); }
inline void u64(std::string& o, uint32_t field, uint64_t v) {
  char b[20];
  o.append(b, size_t(put_u64(b, field, v) - b));
}
inline void i64(std::string& o, uint32_t field, int64_t v) { u64(o, field, uint64_t(v)); }  // int64: two's complement
inline void fixed64(std::string& o, uint32_t field, uint64_t v) {
  char b[20];
  o.append(b, size_t(put_fixed64(b, field, v) - b));
}
inline void dbl(std::string& o, uint32_t field, double d) {
  uint64_t v;
  std::memcpy(&v, &d, 8);
  fixed64(o, field, v);
}
inline void bytes(std::string& o, uint32_t field, std::string_view s) {
  char b[20];
  char* p = put_varint(put_key(b, field, kBytes), s.size());
  o.append(b, size_t(p - b));
  o.append(s.data(), s.size());
}
}  // namespace pb

}  // namespace cutrace
