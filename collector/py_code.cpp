#include "collector/py_code.h"
#include <sys/uio.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include "runtime/config.h"
#include "runtime/py_layout.h"

namespace cutrace {

namespace {

constexpr size_t kMaxStrChars = 4096;
constexpr size_t kMaxTableBytes = 1 << 20;

bool read_mem(uint64_t addr, void* out, size_t n) {
  if (!addr) return false;
  iovec local{out, n}, remote{reinterpret_cast<void*>(addr), n};
  ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (r == ssize_t(n)) return true;
  static bool warned = false;
  if (r < 0 && (errno == ENOSYS || errno == EPERM) && !warned) {
    warned = true;
    log_warn("process_vm_readv on this process failed (%s): Python frames are not named",
             errno == EPERM ? "EPERM" : "ENOSYS");
  }
  return false;
}

template <class T>
bool read_val(uint64_t addr, T* v) {
  return read_mem(addr, v, sizeof *v);
}

void put_utf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(char(c));
  } else if (c < 0x800) {
    out->push_back(char(0xc0 | (c >> 6)));
    out->push_back(char(0x80 | (c & 63)));
  } else if (c < 0x10000) {
    out->push_back(char(0xe0 | (c >> 12)));
    out->push_back(char(0x80 | ((c >> 6) & 63)));
    out->push_back(char(0x80 | (c & 63)));
  } else {
    out->push_back(char(0xf0 | (c >> 18)));
    out->push_back(char(0x80 | ((c >> 12) & 63)));
    out->push_back(char(0x80 | ((c >> 6) & 63)));
    out->push_back(char(0x80 | (c & 63)));
  }
}

bool read_bytes_obj(uint64_t addr, std::string* out) {
  const PyLayout& l = *g_pyrt.layout;
  uint64_t type = 0;
  int64_t size = 0;
  if (!read_val(addr + 8, &type) || type != reinterpret_cast<uint64_t>(g_pyrt.bytes_type)) return false;
  if (!read_val(addr + l.bytes_size, &size) || size < 0 || size_t(size) > kMaxTableBytes) return false;
  out->resize(size_t(size));
  return size == 0 || read_mem(addr + l.bytes_data, &(*out)[0], size_t(size));
}

// Signed and unsigned varints of the 3.11+ location table (6 bits a byte, 0x40 continues).
uint32_t varint(const std::string& t, size_t* i) {
  uint32_t v = 0, shift = 0;
  while (*i < t.size()) {
    uint8_t b = uint8_t(t[(*i)++]);
    v |= uint32_t(b & 63) << shift;
    shift += 6;
    if (!(b & 64) || shift > 30) break;
  }
  return v;
}
int32_t svarint(const std::string& t, size_t* i) {
  uint32_t v = varint(t, i);
  return (v & 1) ? -int32_t(v >> 1) : int32_t(v >> 1);
}

}  // namespace

bool py_read_str(uint64_t addr, std::string* out) {
  out->clear();
  const PyLayout* lp = g_pyrt.layout;
  if (!lp) return false;
  const PyLayout& l = *lp;
  uint64_t type = 0;
  int64_t len = 0;
  uint32_t state = 0;
  if (!read_val(addr + 8, &type) || type != reinterpret_cast<uint64_t>(g_pyrt.str_type)) return false;
  if (!read_val(addr + l.str_length, &len) || !read_val(addr + l.str_state, &state) || len < 0) return false;
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || (kind != 1 && kind != 2 && kind != 4)) return false;
  size_t n = std::min<size_t>(size_t(len), kMaxStrChars);
  std::string raw(n * kind, '\0');
  if (n && !read_mem(addr + (ascii ? l.ascii_size : l.compact_size), &raw[0], raw.size())) return false;
  if (ascii) {
    out->swap(raw);
    return true;
  }
  for (size_t k = 0; k < n; ++k) {
    uint32_t c = 0;
    if (kind == 1) c = uint8_t(raw[k]);
    else if (kind == 2) c = uint16_t(uint8_t(raw[2 * k]) | uint8_t(raw[2 * k + 1]) << 8);
    else memcpy(&c, &raw[4 * k], 4);
    put_utf8(c, out);
  }
  return true;
}

uint32_t py_line(int minor, const std::string& t, uint32_t first_line, int32_t lasti) {
  if (lasti < 0) return first_line;
  int64_t line = first_line;
  int64_t addr = 0;
  if (minor <= 10) {
    // (bytecode bytes, signed line delta) pairs; -128: the range has no line.
    int64_t target = int64_t(lasti) * 2;
    for (size_t i = 0; i + 1 < t.size(); i += 2) {
      int64_t end = addr + uint8_t(t[i]);
      int8_t ld = int8_t(t[i + 1]);
      if (ld != -128) line += ld;
      if (target < end) return ld == -128 ? 0 : uint32_t(line);
      addr = end;
    }
    return 0;
  }
  size_t i = 0;
  while (i < t.size()) {
    uint8_t b = uint8_t(t[i++]);
    int code = (b >> 3) & 15, len = (b & 7) + 1;
    bool has = true;
    if (code == 15) {
      has = false;
    } else if (code == 14) {
      line += svarint(t, &i);
      varint(t, &i), varint(t, &i), varint(t, &i);
    } else if (code == 13) {
      line += svarint(t, &i);
    } else if (code >= 10) {
      line += code - 10;
      i += 2;
    } else {
      i += 1;
    }
    if (lasti < addr + len) return has && line > 0 ? uint32_t(line) : 0;
    addr += len;
  }
  return 0;
}

uint32_t PyCodeTable::code_id(const PyRawFrame& f) {
  uint64_t key = f.code ^ (uint64_t(f.first_line) << 48);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  uint32_t id = uint32_t(tables_.size() + 1);
  ids_.emplace(key, id);
  std::string file = "?", name = "?", qual, table;
  const PyLayout* l = g_pyrt.layout;
  uint64_t type = 0;
  uint32_t first = 0;
  if (l && read_val(f.code + 8, &type) && type == reinterpret_cast<uint64_t>(g_pyrt.code_type) &&
      read_val(f.code + l->co_firstlineno, &first) && first == f.first_line) {
    uint64_t p = 0;
    if (read_val(f.code + l->co_filename, &p) && !py_read_str(p, &file)) file = "?";
    if (read_val(f.code + l->co_name, &p) && !py_read_str(p, &name)) name = "?";
    if (read_val(f.code + l->co_qualname, &p) && !py_read_str(p, &qual)) qual.clear();
    if (!read_val(f.code + l->co_linetable, &p) || !read_bytes_obj(p, &table)) table.clear();
  }
  if (qual.empty()) qual = name;
  tables_.push_back(std::move(table));
  first_.push_back(f.first_line);
  trace::PyCodeRec r{};
  r.code = id;
  r.file_id = w_.intern(file);
  r.name_id = w_.intern(name);
  r.qualname_id = w_.intern(qual);
  r.first_line = f.first_line;
  w_.add(r, trace::RecType::PyCode);
  return id;
}

trace::PyFrame PyCodeTable::frame(const PyRawFrame& f) {
  trace::PyFrame out{};
  out.code = code_id(f);
  uint64_t key = uint64_t(out.code) << 32 | uint32_t(f.lasti);
  auto it = lines_.find(key);
  if (it != lines_.end()) {
    out.line = it->second;
    return out;
  }
  const std::string& t = tables_[out.code - 1];
  out.line = t.empty() ? 0 : py_line(g_pyrt.layout ? g_pyrt.layout->minor : 11, t, first_[out.code - 1], f.lasti);
  lines_.emplace(key, out.line);
  return out;
}

}  // namespace cutrace
