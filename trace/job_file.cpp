#include "trace/job_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "trace/format.h"

namespace cutrace::job {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool pread_all(int fd, void* buf, size_t n, uint64_t off) {
  char* p = static_cast<char*>(buf);
  while (n) {
    ssize_t got = ::pread(fd, p, n, off_t(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= size_t(got), off += uint64_t(got);
  }
  return true;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put, n -= size_t(put);
  }
  return true;
}

void put_props(std::string* out, const Props& props) {
  for (const auto& [k, v] : props) {
    std::string line = k + "=" + v;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\n' || (line[i] == '=' && i < k.size())) line[i] = ' ';
    }
    *out += line + "\n";
  }
}

Props get_props(std::string_view s) {
  Props p;
  while (!s.empty()) {
    size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    size_t eq = line.find('=');
    if (eq != std::string_view::npos) p.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    if (nl == std::string_view::npos) break;
    s.remove_prefix(nl + 1);
  }
  return p;
}

}  // namespace

std::string_view prop(const Props& p, std::string_view key) {
  for (const auto& [k, v] : p)
    if (k == key) return v;
  return {};
}

std::string_view Index::prop(std::string_view key) const { return job::prop(props, key); }

bool is_job_file(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  char magic[sizeof kMagic];
  struct stat st {};
  return f.fd >= 0 && fstat(f.fd, &st) == 0 && S_ISREG(st.st_mode) && pread_all(f.fd, magic, sizeof magic, 0) &&
         memcmp(magic, kMagic, sizeof magic) == 0;
}

bool read_index(const std::string& path, Index* out, std::string* err) {
  auto fail = [&](const std::string& why) {
    if (err) *err = path + ": " + why;
    return false;
  };
  *out = Index{};
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (f.fd < 0 || fstat(f.fd, &st) != 0) return fail(std::string("cannot open: ") + strerror(errno));
  uint64_t size = uint64_t(st.st_size);
  Header h{};
  if (size < sizeof h || !pread_all(f.fd, &h, sizeof h, 0)) return fail("merged job file: truncated header");
  if (memcmp(h.magic, kMagic, sizeof kMagic) != 0) return fail("not a merged job file (bad magic)");
  if (h.version_major != kVersionMajor)
    return fail("merged job file version " + std::to_string(h.version_major) + "." + std::to_string(h.version_minor) +
                " is not read by this cutrace (reads " + std::to_string(kVersionMajor) + ".x)");
  if (h.header_size < sizeof h || h.header_size > 4096 || h.index_size > kMaxIndex ||
      uint64_t(h.header_size) + h.index_size > size)
    return fail("merged job file: corrupt header");
  std::string idx(h.index_size, '\0');
  if (!pread_all(f.fd, idx.data(), idx.size(), h.header_size)) return fail("merged job file: truncated index");
  if (trace::xxh32(idx.data(), idx.size()) != h.index_checksum) return fail("merged job file: index checksum mismatch");
  out->version_major = h.version_major;
  out->version_minor = h.version_minor;
  size_t pos = 0;
  for (uint32_t i = 0; i < h.members; ++i) {
    MemberHead m{};
    if (idx.size() - pos < sizeof m) return fail("merged job file: corrupt index");
    memcpy(&m, idx.data() + pos, sizeof m);
    pos += sizeof m;
    if (m.name_size == 0 || m.name_size > 4096 || m.props_size > idx.size() - pos ||
        m.name_size > idx.size() - pos - m.props_size)
      return fail("merged job file: corrupt index");
    Member mem;
    mem.name.assign(idx.data() + pos, m.name_size);
    pos += m.name_size;
    mem.props = get_props(std::string_view(idx.data() + pos, m.props_size));
    pos += m.props_size;
    mem.data_offset = m.data_offset;
    mem.data_size = m.data_size;
    mem.clock_offset_ns = m.clock_offset_ns;
    if (mem.name.find('/') != std::string::npos || mem.data_offset > size || mem.data_size > size - mem.data_offset)
      return fail("merged job file: member " + std::to_string(i) + " lies outside the file");
    out->members.push_back(std::move(mem));
  }
  out->props = get_props(std::string_view(idx.data() + pos, idx.size() - pos));
  return true;
}

bool split_member_path(const std::string& path, std::string* file, std::string* member) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == path.size()) return false;
  std::string f = path.substr(0, slash);
  if (!is_job_file(f)) return false;
  *file = std::move(f);
  *member = path.substr(slash + 1);
  return true;
}

bool find_source(const std::string& path, Source* out, std::string* err) {
  std::string file, member;
  if (split_member_path(path, &file, &member)) {
    Index idx;
    if (!read_index(file, &idx, err)) return false;
    for (const Member& m : idx.members) {
      if (m.name == member) {
        *out = Source{file, m.data_offset, m.data_size};
        return true;
      }
    }
    if (err) *err = path + ": no such member";
    return false;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (err) *err = "cannot read " + path + ": " + strerror(errno);
    return false;
  }
  *out = Source{path, 0, uint64_t(st.st_size)};
  return true;
}

bool write_job_file(const std::string& out, const std::vector<Member>& members, const std::vector<Source>& sources,
                    const Props& job_props, std::string* err) {
  auto fail = [&](const std::string& why) {
    if (err) *err = why;
    return false;
  };
  if (members.size() != sources.size()) return fail("internal error: members and sources differ");
  std::vector<uint64_t> sizes;
  for (const Source& s : sources) sizes.push_back(s.size);
  // The index: its size does not depend on the offsets (fixed-size fields), so lay it out once
  // with zero offsets to learn where the data starts.
  auto index = [&](const std::vector<uint64_t>& offsets) {
    std::string idx;
    for (size_t i = 0; i < members.size(); ++i) {
      std::string props;
      put_props(&props, members[i].props);
      MemberHead m{};
      m.data_offset = offsets[i];
      m.data_size = sizes[i];
      m.clock_offset_ns = members[i].clock_offset_ns;
      m.name_size = uint32_t(members[i].name.size());
      m.props_size = uint32_t(props.size());
      idx.append(reinterpret_cast<const char*>(&m), sizeof m);
      idx += members[i].name;
      idx += props;
    }
    put_props(&idx, job_props);
    return idx;
  };
  std::vector<uint64_t> offsets(members.size(), 0);
  uint64_t pos = sizeof(Header) + index(offsets).size();
  for (size_t i = 0; i < members.size(); ++i) {
    pos = (pos + 7) & ~uint64_t(7);
    offsets[i] = pos;
    pos += sizes[i];
  }
  std::string idx = index(offsets);
  if (idx.size() > kMaxIndex)
    return fail("the index of " + out + " would exceed " + std::to_string(kMaxIndex) + " bytes");
  Header h{};
  memcpy(h.magic, kMagic, sizeof kMagic);
  h.version_major = kVersionMajor;
  h.version_minor = kVersionMinor;
  h.header_size = sizeof h;
  h.index_size = uint32_t(idx.size());
  h.index_checksum = trace::xxh32(idx.data(), idx.size());
  h.members = uint32_t(members.size());

  std::string tmp = out + ".partial";
  Fd o;
  o.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (o.fd < 0) return fail("cannot write " + tmp + ": " + strerror(errno));
  auto abandon = [&](const std::string& why) {
    ::unlink(tmp.c_str());
    return fail(why);
  };
  std::string head(reinterpret_cast<const char*>(&h), sizeof h);
  head += idx;
  if (!write_all(o.fd, head.data(), head.size())) return abandon("cannot write " + tmp + ": " + strerror(errno));
  uint64_t written = head.size();
  std::vector<char> buf(1 << 20);
  for (size_t i = 0; i < members.size(); ++i) {
    static const char zeros[8] = {};
    if (!write_all(o.fd, zeros, size_t(offsets[i] - written)))
      return abandon("cannot write " + tmp + ": " + strerror(errno));
    written = offsets[i];
    Fd in;
    const std::string& src = sources[i].file;
    in.fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
    if (in.fd < 0) return abandon("cannot read " + src + ": " + strerror(errno));
    uint64_t left = sizes[i], at = sources[i].offset;
    while (left) {
      ssize_t got = ::pread(in.fd, buf.data(), size_t(std::min<uint64_t>(left, buf.size())), off_t(at));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return abandon("cannot read " + src + ": " + (got < 0 ? strerror(errno) : "it shrank"));
      at += uint64_t(got);
      if (!write_all(o.fd, buf.data(), size_t(got))) return abandon("cannot write " + tmp + ": " + strerror(errno));
      left -= uint64_t(got);
      written += uint64_t(got);
    }
  }
  if (::fsync(o.fd) != 0 || ::close(o.fd) != 0) {
    o.fd = -1;
    return abandon("cannot write " + tmp + ": " + strerror(errno));
  }
  o.fd = -1;
  if (::rename(tmp.c_str(), out.c_str()) != 0)
    return abandon("cannot rename " + tmp + " to " + out + ": " + strerror(errno));
  return true;
}

}  // namespace cutrace::job
