#include "trace/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
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

uint16_t record_type(const void* rec) {
  trace::RecHeader h;
  std::memcpy(&h, rec, sizeof h);
  return h.type;
}

// Flight mode: records that later records refer to by id, or that describe the whole process.
// Kept whole, so that any block of the ring can be read after them (docs/FORMAT.md).
bool is_definition(uint16_t type) {
  switch (trace::RecType(type)) {
    case trace::RecType::String:
    case trace::RecType::Meta:
    case trace::RecType::ApiName:
    case trace::RecType::Thread:
    case trace::RecType::Device:
    case trace::RecType::Stream:
    case trace::RecType::KernelConfig:
    case trace::RecType::Module:
    case trace::RecType::Stack:
    case trace::RecType::PyCode:
    case trace::RecType::PyStack:
    case trace::RecType::CounterDef:
    case trace::RecType::CounterMissing: return true;
    default: return false;
  }
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
  block_begin_ns_ = monotonic_now();
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

char* TraceWriter::reserve(size_t n, uint16_t type) {
  ++records_;
  if (!open_ || closed_ || failed_) return nullptr;
  if (flight_) {
    const bool clock = type == uint16_t(trace::RecType::ClockSync) && !clock_kept_;
    if (clock || is_definition(type)) {
      clock_kept_ |= clock;
      size_t at = defs_.size();
      defs_.resize(at + n);
      return defs_.data() + at;
    }
    if (raw_.size() + n > trace::kBlockTargetRaw) ring_push(monotonic_now());
    if (failed_) return nullptr;
    ++raw_records_;
  } else if (raw_.size() + n > trace::kBlockTargetRaw && !flush()) {
    return nullptr;
  }
  size_t at = raw_.size();
  raw_.resize(at + n);
  return raw_.data() + at;
}

void TraceWriter::append(const void* rec) {
  uint16_t size = record_size(rec);
  if (size < sizeof(trace::RecHeader)) return;  // malformed: never written
  if (char* dst = reserve(size, record_type(rec))) std::memcpy(dst, rec, size);
}

void TraceWriter::append_var(const void* fixed, size_t fixed_size, const void* tail, size_t tail_size) {
  if (fixed_size < sizeof(trace::RecHeader) || fixed_size > kMaxRecordSize) return;
  tail_size = std::min(tail_size, kMaxRecordSize - fixed_size);
  char* dst = reserve(fixed_size + tail_size, record_type(fixed));
  if (!dst) return;
  std::memcpy(dst, fixed, fixed_size);
  if (tail_size) std::memcpy(dst + fixed_size, tail, tail_size);
  uint16_t size = static_cast<uint16_t>(fixed_size + tail_size);
  std::memcpy(dst + offsetof(trace::RecHeader, size), &size, sizeof size);
}

bool TraceWriter::flush() {
  if (failed_) return false;
  if (!open_ || closed_) return true;
  if (flight_) {
    int64_t now = monotonic_now();
    if (!raw_.empty()) ring_push(now);
    else block_begin_ns_ = now, ring_trim(now);  // no record since the last block
    return !failed_;
  }
  if (raw_.empty()) return true;
  bool ok = write_block(raw_.data(), raw_.size(), 0);
  raw_.clear();
  return ok;
}

bool TraceWriter::write_block(const char* raw, size_t n, uint64_t records) {
  const char* payload = raw;
  size_t payload_size = n;
  if (!v1_) {
    encoder_.encode(raw, n, &packed_);
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
  file_records_ += records;
  return write_out(out_.data(), sizeof bh + size_t(csize));
}

void TraceWriter::ring_trim(int64_t now) {
  while (!ring_.empty() && ring_.front().begin_ns < now - keep_ns_) {
    ring_bytes_ -= ring_.front().lz4.size();
    ring_.pop_front();
  }
}

void TraceWriter::ring_push(int64_t now) {
  if (raw_.empty()) return;
  const int raw_size = static_cast<int>(raw_.size());
  out_.resize(size_t(LZ4_compressBound(raw_size)));
  int csize = LZ4_compress_default(raw_.data(), out_.data(), raw_size, static_cast<int>(out_.size()));
  if (csize <= 0) {
    fail("LZ4 compression failed");
    return;
  }
  FlightBlock b;
  b.lz4.assign(out_.data(), out_.data() + csize);
  b.raw_size = uint32_t(raw_size);
  b.records = raw_records_;
  b.begin_ns = block_begin_ns_;
  ring_bytes_ += b.lz4.size();
  ring_.push_back(std::move(b));
  raw_.clear();
  raw_records_ = 0;
  block_begin_ns_ = now;
  ring_trim(now);
  while (ring_bytes_ > budget_ && !ring_.empty()) {  // the oldest go first: the span shrinks
    ring_bytes_ -= ring_.front().lz4.size();
    ring_.pop_front();
    ++budget_cut_;
  }
}

bool TraceWriter::write_defs() {
  while (defs_written_ < defs_.size() && !failed_) {
    size_t begin = defs_written_, p = begin;
    uint64_t k = 0;
    while (p < defs_.size()) {
      size_t size = record_size(defs_.data() + p);
      if (p > begin && p - begin + size > trace::kBlockTargetRaw) break;
      p += size, ++k;
    }
    if (!write_block(defs_.data() + begin, p - begin, k)) return false;
    defs_written_ = p;
  }
  return !failed_;
}

int64_t TraceWriter::snapshot(std::string_view trigger) {
  int64_t now = monotonic_now();
  if (!flight_ || !open_ || closed_ || failed_) return now;
  ring_push(now);
  ring_trim(now);
  int64_t begin = ring_.empty() ? now : std::max(ring_.front().begin_ns, now - keep_ns_);
  uint64_t kept = 0;
  for (const FlightBlock& b : ring_) kept += b.records;
  trace::WindowRec win{};
  win.h.type = uint16_t(trace::RecType::Window), win.h.size = sizeof win;
  win.index = snapshots_, win.reason_id = intern(std::string("flight:") + std::string(trigger));
  char v[256];
  snprintf(v, sizeof v, "trigger=%.*s begin_ns=%lld end_ns=%lld seconds=%.3f records=%llu budget_cut_blocks=%llu",
           int(trigger.size()), trigger.data(), (long long)begin, (long long)now, double(now - begin) / 1e9,
           (unsigned long long)kept, (unsigned long long)budget_cut_);
  meta("flight_snapshot." + std::to_string(snapshots_), v);
  write_defs();
  win.ts = begin, win.edge = uint8_t(trace::WindowEdge::Begin);
  write_block(reinterpret_cast<const char*>(&win), sizeof win, 1);
  std::vector<char> scratch;
  while (!ring_.empty() && !failed_) {
    FlightBlock& b = ring_.front();
    scratch.resize(b.raw_size);
    int n = LZ4_decompress_safe(b.lz4.data(), scratch.data(), int(b.lz4.size()), int(b.raw_size));
    if (n != int(b.raw_size)) {
      fail("flight ring block damaged");
      break;
    }
    write_block(scratch.data(), scratch.size(), b.records);
    ring_bytes_ -= b.lz4.size();
    ring_.pop_front();
  }
  win.ts = now, win.edge = uint8_t(trace::WindowEdge::End);
  write_block(reinterpret_cast<const char*>(&win), sizeof win, 1);
  ++snapshots_;
  budget_cut_ = 0;
  last_snapshot_ns_ = now;
  block_begin_ns_ = now;
  return begin;
}

bool TraceWriter::close(uint64_t dropped_total, uint32_t end_flags) {
  if (!open_ || closed_) return !failed_;
  trace::EndRec end{};
  end.ts = monotonic_now();
  if (flight_) {  // the ring is dropped: only snapshot() writes it
    write_defs();
    end.h.type = uint16_t(trace::RecType::End), end.h.size = sizeof end;
    end.records = file_records_, end.dropped = dropped_total, end.flags = end_flags;
    write_block(reinterpret_cast<const char*>(&end), sizeof end, 1);
    raw_.clear();
    ring_.clear();
    close_fd();
    closed_ = true;
    return !failed_;
  }
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
