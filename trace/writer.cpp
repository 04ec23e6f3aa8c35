#include "trace/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace cutrace {
namespace {

constexpr size_t kMaxRecordSize = 0xFFFF;  // RecHeader::size is a u16

int64_t monotonic_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

uint16_t record_size(const void* rec) {
  trace::RecHeader h;
  std::memcpy(&h, rec, sizeof h);
  return h.size;
}

}  // namespace

TraceWriter::~TraceWriter() {
  if (open_ && !closed_) {
    flush();
    close_fd();
  }
}

bool TraceWriter::open(const std::string& path, std::string* err) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;  // callers may retry on EEXIST
    if (err) *err = "cannot create " + path + ": " + strerror(e);
    errno = e;
    return false;
  }
  return open_fd(fd, err);
}

bool TraceWriter::open_fd(int fd, std::string* err) {
  if (open_) {
    if (err) *err = "trace writer already open";
    return false;
  }
  fd_ = fd;
  if (start()) return true;
  if (err) *err = error_;
  return false;
}

bool TraceWriter::open_memory(std::string* sink) {
  if (open_) return false;
  sink_ = sink;
  return start();
}

bool TraceWriter::start() {
  open_ = true;
  raw_.reserve(trace::kBlockTargetRaw);
  trace::FileHeader fh{};
  std::memcpy(fh.magic, trace::kFileMagic, sizeof fh.magic);
  fh.version_major = v1_ ? 1 : trace::kVersionMajor;
  fh.version_minor = v1_ ? 1 : trace::kVersionMinor;
  fh.header_size = sizeof(trace::FileHeader);
  return write_out(reinterpret_cast<const char*>(&fh), sizeof fh);
}

uint32_t TraceWriter::intern(std::string_view s) {
  if (s.size() > trace::kMaxStringBytes) {  // cut before a UTF-8 continuation byte: no character split
    size_t n = trace::kMaxStringBytes;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    s = s.substr(0, n);
  }
  auto it = string_ids_.find(s);
  if (it != string_ids_.end()) return it->second;

  uint32_t id = static_cast<uint32_t>(string_ids_.size() + 1);
  string_store_.emplace_back(s);
  string_ids_.emplace(string_store_.back(), id);

  trace::StringRec r{};
  r.h.type = static_cast<uint16_t>(trace::RecType::String);
  r.id = id;
  append_var(&r, sizeof r, s.data(), s.size());
  return id;
}

void TraceWriter::meta(std::string_view key, std::string_view value) {
  trace::MetaRec r{};
  r.key_id = intern(key);
  r.value_id = intern(value);
  add(r, trace::RecType::Meta);
}

void TraceWriter::api_name(uint16_t api, std::string_view name) {
  trace::ApiNameRec r{};
  r.api = api;
  r.name_id = intern(name);
  add(r, trace::RecType::ApiName);
}

char* TraceWriter::reserve(size_t n) {
  ++records_;
  if (!open_ || closed_ || failed_) return nullptr;
  if (raw_.size() + n > trace::kBlockTargetRaw && !flush()) return nullptr;
  size_t at = raw_.size();
  raw_.resize(at + n);
  return raw_.data() + at;
}

void TraceWriter::append(const void* rec) {
  uint16_t size = record_size(rec);
  if (size < sizeof(trace::RecHeader)) return;  // malformed: never written
  if (char* dst = reserve(size)) std::memcpy(dst, rec, size);
}

void TraceWriter::append_var(const void* fixed, size_t fixed_size, const void* tail, size_t tail_size) {
  if (fixed_size < sizeof(trace::RecHeader) || fixed_size > kMaxRecordSize) return;
  tail_size = std::min(tail_size, kMaxRecordSize - fixed_size);
  char* dst = reserve(fixed_size + tail_size);
  if (!dst) return;
  std::memcpy(dst, fixed, fixed_size);
  if (tail_size) std::memcpy(dst + fixed_size, tail, tail_size);
  uint16_t size = static_cast<uint16_t>(fixed_size + tail_size);
  std::memcpy(dst + offsetof(trace::RecHeader, size), &size, sizeof size);
}

bool TraceWriter::flush() {
  if (failed_) return false;
  if (raw_.empty() || !open_) return true;

  const char* payload = raw_.data();
  size_t payload_size = raw_.size();
  if (!v1_) {
    encoder_.encode(raw_.data(), raw_.size(), &packed_);
    payload = packed_.data();
    payload_size = packed_.size();
  }
  const int raw_size = static_cast<int>(payload_size);
  out_.resize(sizeof(trace::BlockHeader) + LZ4_compressBound(raw_size));
  char* body = out_.data() + sizeof(trace::BlockHeader);
  int csize = LZ4_compress_default(payload, body, raw_size, static_cast<int>(out_.size() - sizeof(trace::BlockHeader)));
  if (csize <= 0) {
    fail("LZ4 compression failed");
    return false;
  }
  trace::BlockHeader bh{};
  bh.magic = trace::kBlockMagic;
  bh.compressed_size = static_cast<uint32_t>(csize);
  bh.raw_size = static_cast<uint32_t>(raw_size);
  bh.checksum = trace::xxh32(payload, payload_size);
  bh.seq = seq_++;
  std::memcpy(out_.data(), &bh, sizeof bh);
  raw_.clear();
  return write_out(out_.data(), sizeof bh + size_t(csize));
}

bool TraceWriter::close(uint64_t dropped_total, uint32_t end_flags) {
  if (!open_ || closed_) return !failed_;
  trace::EndRec end{};
  end.ts = monotonic_now();
  end.records = records_;
  end.dropped = dropped_total;
  end.flags = end_flags;
  add(end, trace::RecType::End);
  flush();
  close_fd();
  closed_ = true;
  return !failed_;
}

bool TraceWriter::write_out(const char* p, size_t n) {
  if (failed_) return false;
  if (sink_) {
    sink_->append(p, n);
    bytes_written_ += n;
    return true;
  }
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      fail(std::string("write failed: ") + strerror(errno));
      return false;
    }
    if (w == 0) {
      fail("write failed: no progress (short write)");
      return false;
    }
    p += w;
    n -= size_t(w);
    bytes_written_ += size_t(w);
  }
  return true;
}

bool TraceWriter::close_fd() {
  if (fd_ < 0) return true;
  int rc = ::close(fd_);  // not retried on EINTR: the fd is released either way on Linux
  fd_ = -1;
  if (rc != 0 && errno != EINTR) {
    fail(std::string("close failed: ") + strerror(errno));
    return false;
  }
  return true;
}

void TraceWriter::fail(std::string msg) {
  if (failed_) return;
  failed_ = true;
  error_ = std::move(msg);
  raw_.clear();
}

}  // namespace cutrace
