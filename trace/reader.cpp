#include "trace/reader.h"
#include "trace/safe_file.h"

#include "trace/job_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>

namespace cutrace {
namespace {

constexpr size_t kWindow = 4u << 20;  // file read window; grows if one block needs more
constexpr size_t kScanChunk = 64u << 10;
constexpr uint32_t kMaxHeaderSize = 1u << 16;
constexpr char kBlockMagicBytes[4] = {'C', 'B', 'L', 'K'};
static_assert(trace::kBlockMagic == ('C' | 'B' << 8 | 'L' << 16 | uint32_t('K') << 24));

bool plausible(const trace::BlockHeader& h) {
  return h.magic == trace::kBlockMagic && h.raw_size <= trace::kMaxBlockRaw && h.compressed_size > 0 &&
         h.compressed_size <= uint32_t(LZ4_compressBound(int(trace::kMaxBlockRaw)));
}

const char* find_magic(const char* p, size_t n) {
  const char* end = p + n - (sizeof kBlockMagicBytes - 1);
  while (p < end) {
    p = static_cast<const char*>(memchr(p, kBlockMagicBytes[0], size_t(end - p)));
    if (!p) return nullptr;
    if (memcmp(p, kBlockMagicBytes, sizeof kBlockMagicBytes) == 0) return p;
    ++p;
  }
  return nullptr;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

// ---- ByteSource ------------------------------------------------------------------------------

ByteSource::~ByteSource() { close(); }

bool ByteSource::open_file(const std::string& path, std::string* err) {
  close();
  struct stat st {};
  fd_ = open_regular(path.c_str(), 0, &st);  // a FIFO or device named like a trace must not block
  if (fd_ < 0) {
    if (err)
      *err = "cannot open " + path + ": " +
             (errno == EINVAL && is_dir(path) ? "is a directory" : open_regular_error(errno));
    close();
    return false;
  }
  size_ = uint64_t(st.st_size);
  base_ = 0;
  ranged_ = false;
  return true;
}

bool ByteSource::open_file_range(const std::string& path, uint64_t base, uint64_t size, std::string* err) {
  if (!open_file(path, err)) return false;
  if (base > size_ || size > size_ - base) {
    if (err) *err = "cannot open " + path + ": range past its end";
    close();
    return false;
  }
  base_ = base;
  size_ = size;
  ranged_ = true;
  seek(0);
  return true;
}

void ByteSource::open_memory(std::string_view bytes) {
  close();
  mem_ = bytes.data();
  size_ = bytes.size();
  seek(0);
}

void ByteSource::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  mem_ = nullptr;
  std::vector<char>().swap(buf_);
  cur_ = end_ = nullptr;
  pos_ = size_ = 0;
  error_.clear();
}

size_t ByteSource::ensure(size_t n) {
  size_t avail = size_t(end_ - cur_);
  if (avail >= n || fd_ < 0) return std::min(n, avail);
  if (buf_.size() < std::max(n, kWindow)) {
    std::vector<char> bigger(std::max(n, kWindow));
    if (avail) memcpy(bigger.data(), cur_, avail);
    buf_.swap(bigger);
  } else if (avail) {
    memmove(buf_.data(), cur_, avail);
  }
  cur_ = buf_.data();
  end_ = cur_ + avail;
  while (avail < n && error_.empty() && (!ranged_ || pos_ + avail < size_)) {
    // A member of a merged job file ends at size_; a plain file is read to its current end.
    size_t want = ranged_ ? size_t(std::min<uint64_t>(buf_.size() - avail, size_ - pos_ - avail)) : buf_.size() - avail;
    ssize_t got = pread(fd_, buf_.data() + avail, want, off_t(base_ + pos_ + avail));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) error_ = "read error: " + std::string(strerror(errno));
    if (got <= 0) break;
    avail += size_t(got);
    end_ = cur_ + avail;
  }
  return std::min(n, avail);
}

void ByteSource::consume(size_t n) {
  cur_ += n;
  pos_ += n;
}

void ByteSource::seek(uint64_t pos) {
  pos_ = std::min(pos, size_);
  if (mem_) {
    cur_ = mem_ + pos_;
    end_ = mem_ + size_;
  } else {
    cur_ = end_ = buf_.data();
  }
}

// ---- TraceReader: opening --------------------------------------------------------------------

bool TraceReader::open(const std::string& path, std::string* err) {
  reset(path);
  std::string file, member;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 && errno == ENOTDIR && job::split_member_path(path, &file, &member)) {
    job::Index idx;
    if (!job::read_index(file, &idx, err)) return false;
    for (const job::Member& m : idx.members) {
      if (m.name != member) continue;
      src_file_ = file, src_base_ = m.data_offset, src_size_ = m.data_size, src_ranged_ = true;
      return src_.open_file_range(file, m.data_offset, m.data_size, err) && open_source(err);
    }
    if (err) *err = path + ": no member " + member + " in the merged job file " + file;
    return false;
  }
  if (S_ISREG(st.st_mode) && job::is_job_file(path)) {
    if (err) *err = path + ": a merged job file (cutrace merge -o): its traces are " + path + "/<member>";
    return false;
  }
  src_file_ = path;
  return src_.open_file(path, err) && open_source(err);
}

bool TraceReader::reopen() {
  if (src_.is_open()) return true;
  if (src_file_.empty()) return false;  // bytes in memory are gone after close()
  std::string err;
  return src_ranged_ ? src_.open_file_range(src_file_, src_base_, src_size_, &err) : src_.open_file(src_file_, &err);
}

bool TraceReader::open_memory(std::string_view bytes, const std::string& name, std::string* err) {
  reset(name);
  src_.open_memory(bytes);
  return open_source(err);
}

void TraceReader::reset(const std::string& path) {
  close();
  path_ = path;
  data_start_ = 0;
  version_major_ = version_minor_ = 0;
  status_ = ReadStatus{};
  next_seq_ = 0;
  seen_.clear();
  src_file_.clear();
  src_base_ = src_size_ = 0;
  src_ranged_ = false;
  strings_.clear();
  api_names_.clear();
  metas_.clear();
  devices_.clear();
  streams_.clear();
  threads_.clear();
  clock_sync_ = trace::ClockSyncRec{};
  decoder_.reset();
}

void TraceReader::close() {
  src_.close();
  std::vector<char>().swap(block_.raw);
  std::vector<char>().swap(block_.records);
}

bool TraceReader::open_source(std::string* err) {
  auto fail = [&](const std::string& msg) {
    if (err) *err = path_ + ": " + msg;
    close();
    return false;
  };
  if (src_.size() == 0) return fail("empty file");
  trace::FileHeader h{};
  size_t n = src_.ensure(sizeof h);
  if (!src_.error().empty()) return fail(src_.error());
  if (memcmp(src_.data(), trace::kFileMagic, std::min(n, sizeof h.magic)) != 0) {
    return fail("not a cutrace trace (bad magic)");
  }
  if (n < sizeof h) {
    return fail("truncated header (" + std::to_string(n) + " of " + std::to_string(sizeof h) + " bytes)");
  }
  memcpy(&h, src_.data(), sizeof h);
  std::string version = std::to_string(h.version_major) + "." + std::to_string(h.version_minor);
  if (h.version_major > trace::kVersionMajor) {
    return fail("trace format version " + version + " is newer than this reader (" +
                std::to_string(trace::kVersionMajor) + ".x); upgrade cutrace");
  }
  if (h.version_major == 0) return fail("unsupported trace format version " + version);
  if (h.header_size < sizeof h || h.header_size > kMaxHeaderSize) {
    return fail("corrupt header (header_size " + std::to_string(h.header_size) + ")");
  }
  if (src_.ensure(h.header_size) < h.header_size) return fail("truncated header");
  version_major_ = h.version_major;
  version_minor_ = h.version_minor;
  data_start_ = h.header_size;
  if (version_major_ == 1 && packed_under_1x()) {
    return fail("the header says format version " + version +
                ", but its blocks hold 2.x packed records: the version field is damaged (byte 8 should be 2)");
  }

  read([](const Record& r) { return is_metadata(r.type()); });
  if (!src_.error().empty()) return fail(src_.error());
  status_ = ReadStatus{};
  return true;
}

// ---- TraceReader: blocks ---------------------------------------------------------------------

bool TraceReader::packed_under_1x() {
  src_.seek(data_start_);
  if (!read_block()) return false;
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (trace::xxh32(block_.raw.data(), block_.size) != block_.checksum) return false;
#endif
  const char* p = block_.raw.data();
  const char* end = p + block_.size;
  while (p < end) {  // a 1.x payload is whole records
    trace::RecHeader h;
    if (end - p < static_cast<ptrdiff_t>(sizeof h)) break;
    std::memcpy(&h, p, sizeof h);
    if (h.size < sizeof h || h.size > end - p) break;
    p += h.size;
  }
  if (p == end) return false;
  codec::BlockDecoder d;
  std::vector<char> out;
  size_t n = 0;
  return d.decode(block_.raw.data(), block_.size, &out, &n);
}

bool TraceReader::accept_block() {
  // Fuzz builds (make fuzz) skip the checksum: a mutated record must reach the parsers behind
  // it instead of failing here (the checksum path itself is covered by the unit tests).
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (trace::xxh32(block_.raw.data(), block_.size) != block_.checksum) {
    ++status_.bad_blocks;  // the frame was intact: the next block follows it
    return false;
  }
#endif
  if (version_major_ >= 2) {
    uint64_t unresolved = decoder_.unresolved();
    if (!decoder_.decode(block_.raw.data(), block_.size, &block_.records, &block_.records_size, &status_.columns)) {
      ++status_.bad_blocks;  // intact but not a packed payload this reader understands
      return false;
    }
    status_.unresolved_configs += decoder_.unresolved() - unresolved;
  }
  return true;
}

bool TraceReader::next_block() {
  while (read_block()) {
    // A block written once never has the seq of an earlier one: the same seq and checksum is a
    // copy (a file concatenated or a region written twice), read once.
    auto [it, fresh] = seen_.emplace(block_.seq, block_.checksum);
    if (!fresh && it->second == block_.checksum) {
      ++status_.duplicate_blocks;
      continue;
    }
    if (!accept_block()) {
      if (fresh) seen_.erase(it);
      continue;
    }
    ++status_.blocks;
    status_.payload_bytes += block_.size;
    status_.compressed_bytes += block_.disk_size;
    count_seq(block_.seq);
    return true;
  }
  return false;
}

bool TraceReader::read_block() {
  Block& b = block_;
  for (;;) {
    trace::BlockHeader h;
    size_t have = src_.ensure(sizeof h);
    if (have == 0) return false;
    if (have < sizeof h) {  // cut inside a block header
      status_.trailing_bytes += have;
      src_.consume(have);
      return false;
    }
    memcpy(&h, src_.data(), sizeof h);
    if (!plausible(h)) {
      ++status_.bad_blocks;
      resync();
      continue;
    }
    size_t total = sizeof h + h.compressed_size;
    if (src_.ensure(total) < total) {
      // Either the file was cut while this block was written, or its size field is damaged:
      // only a later block magic tells them apart.
      uint64_t start = src_.pos();
      if (!resync()) {
        status_.trailing_bytes += src_.pos() - start;
        return false;
      }
      ++status_.bad_blocks;
      continue;
    }
    // codec::kDecodePadding: the packed decoder may read that far past the payload (2.x).
    if (b.raw.size() < h.raw_size + codec::kDecodePadding) b.raw.resize(h.raw_size + codec::kDecodePadding);
    int got = LZ4_decompress_safe(src_.data() + sizeof h, b.raw.data(), int(h.compressed_size), int(h.raw_size));
    if (got < 0 || uint32_t(got) != h.raw_size) {
      ++status_.bad_blocks;
      resync();
      continue;
    }
    b.offset = src_.pos();
    src_.consume(total);
    b.size = h.raw_size;
    b.checksum = h.checksum;
    b.seq = h.seq;
    b.disk_size = uint32_t(total);
    return true;
  }
}

bool TraceReader::resync() {
  src_.consume(1);
  for (;;) {
    size_t have = src_.ensure(kScanChunk);
    if (have < sizeof kBlockMagicBytes) {
      src_.consume(have);
      return false;
    }
    if (const char* hit = find_magic(src_.data(), have)) {
      src_.consume(size_t(hit - src_.data()));
      return true;
    }
    src_.consume(have - (sizeof kBlockMagicBytes - 1));
  }
}

void TraceReader::count_seq(uint64_t seq) {
  if (seq != next_seq_) {
    ++status_.seq_gaps;
    if (seq > next_seq_) status_.missing_blocks += seq - next_seq_;
  }
  next_seq_ = seq + 1;
}

// ---- TraceReader: metadata -------------------------------------------------------------------

// Fields of packed records are copied into locals before they meet a container: binding a
// reference to a misaligned field is undefined behaviour.
void TraceReader::absorb(const char* p, uint16_t type) {
  Record rec(p);
  switch (static_cast<trace::RecType>(type)) {
    case trace::RecType::String: {
      uint32_t id = rec.as<trace::StringRec>().id;
      strings_[id].assign(rec.tail(sizeof(trace::StringRec)));
      break;
    }
    case trace::RecType::Meta: {
      const auto& m = rec.as<trace::MetaRec>();
      set_meta(str(m.key_id), str(m.value_id));
      break;
    }
    case trace::RecType::ApiName: {
      uint16_t api = rec.as<trace::ApiNameRec>().api;
      api_names_[api] = rec.as<trace::ApiNameRec>().name_id;
      break;
    }
    case trace::RecType::Thread: {
      uint32_t tid = rec.as<trace::ThreadRec>().tid;
      threads_[tid] = rec.as<trace::ThreadRec>().name_id;
      break;
    }
    case trace::RecType::Device: {
      uint16_t device = rec.as<trace::DeviceRec>().device;
      devices_[device] = rec.as<trace::DeviceRec>();
      break;
    }
    case trace::RecType::Stream: {
      uint32_t stream = rec.as<trace::StreamRec>().stream;
      streams_[stream] = rec.as<trace::StreamRec>();
      break;
    }
    case trace::RecType::ClockSync:
      if (clock_sync_.h.size == 0) clock_sync_ = rec.as<trace::ClockSyncRec>();
      break;
    case trace::RecType::Dropped: status_.dropped += rec.as<trace::DroppedRec>().count; break;
    case trace::RecType::Loss: {
      const trace::LossRec& l = rec.as<trace::LossRec>();
      for (int k = 0; k < trace::kLossKinds; ++k) {
        status_.lost[k] += l.count[k];
        status_.dropped += l.count[k];
      }
      if (status_.losses.size() < 100000) status_.losses.push_back(l);  // bounded by the file's content
      break;
    }
    case trace::RecType::End:
      status_.complete = true;
      status_.end = rec.as<trace::EndRec>();
      break;
    default: break;
  }
}

void TraceReader::set_meta(std::string_view key, std::string_view value) {
  for (auto& kv : metas_) {
    if (kv.first == key) {
      kv.second.assign(value);
      return;
    }
  }
  metas_.emplace_back(std::string(key), std::string(value));
}

std::string_view TraceReader::str(uint32_t id) const {
  if (id == 0) return {};
  auto it = strings_.find(id);
  return it == strings_.end() ? std::string_view("(unknown string)") : it->second;
}

std::string_view TraceReader::api_name(uint16_t api) const {
  auto it = api_names_.find(api);
  return it == api_names_.end() ? std::string_view("(unknown api)") : str(it->second);
}

std::string_view TraceReader::meta(std::string_view key) const {
  for (const auto& kv : metas_) {
    if (kv.first == key) return kv.second;
  }
  return {};
}

int64_t TraceReader::meta_int(std::string_view key, int64_t fallback) const {
  std::string v(meta(key));
  if (v.empty()) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  return *end == '\0' ? x : fallback;
}

// ---- names -----------------------------------------------------------------------------------

namespace {

struct TypeName {
  trace::RecType type;
  const char* name;
};
constexpr TypeName kTypeNames[] = {
    {trace::RecType::String, "String"},
    {trace::RecType::Meta, "Meta"},
    {trace::RecType::ApiName, "ApiName"},
    {trace::RecType::Thread, "Thread"},
    {trace::RecType::Device, "Device"},
    {trace::RecType::Stream, "Stream"},
    {trace::RecType::Kernel, "Kernel"},
    {trace::RecType::Memcpy, "Memcpy"},
    {trace::RecType::Memset, "Memset"},
    {trace::RecType::Sync, "Sync"},
    {trace::RecType::Memory, "Memory"},
    {trace::RecType::Api, "Api"},
    {trace::RecType::CpuSample, "CpuSample"},
    {trace::RecType::GpuSample, "GpuSample"},
    {trace::RecType::ClockSync, "ClockSync"},
    {trace::RecType::Dropped, "Dropped"},
    {trace::RecType::Loss, "Loss"},
    {trace::RecType::Window, "Window"},
    {trace::RecType::End, "End"},
    {trace::RecType::Range, "Range"},
    {trace::RecType::Mark, "Mark"},
    {trace::RecType::Module, "Module"},
    {trace::RecType::Stack, "Stack"},
    {trace::RecType::OpStack, "OpStack"},
    {trace::RecType::Payload, "Payload"},
    {trace::RecType::Hang, "Hang"},
    {trace::RecType::HangItem, "HangItem"},
    {trace::RecType::HangEnd, "HangEnd"},
    {trace::RecType::CounterDef, "CounterDef"},
    {trace::RecType::CounterSample, "CounterSample"},
    {trace::RecType::CounterMissing, "CounterMissing"},
    {trace::RecType::PyCode, "PyCode"},
    {trace::RecType::PyStack, "PyStack"},
};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

const char* pick(const char* const* names, size_t count, unsigned index, const char* other) {
  return index < count ? names[index] : other;
}

}  // namespace

bool is_metadata(trace::RecType t) {
  switch (t) {
    case trace::RecType::String:
    case trace::RecType::Meta:
    case trace::RecType::ApiName:
    case trace::RecType::Thread:
    case trace::RecType::Device:
    case trace::RecType::Stream:
    case trace::RecType::ClockSync: return true;
    default: return false;
  }
}

const char* rec_type_name(uint16_t type) {
  for (const TypeName& t : kTypeNames) {
    if (static_cast<uint16_t>(t.type) == type) return t.name;
  }
  return "Unknown";
}

bool parse_rec_type(std::string_view name, uint16_t* type) {
  for (const TypeName& t : kTypeNames) {
    if (iequals(name, t.name)) {
      *type = static_cast<uint16_t>(t.type);
      return true;
    }
  }
  return false;
}

const char* copy_kind_name(uint8_t kind) {
  static const char* const names[] = {"Unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};
  return pick(names, std::size(names), kind, "Unknown");
}

const char* mem_kind_name(uint8_t kind) {
  static const char* const names[] = {"unknown", "pageable", "pinned", "device", "managed", "array"};
  return pick(names, std::size(names), kind, "unknown");
}

const char* sync_kind_name(uint8_t kind) {
  static const char* const names[] = {"unknown",     "context",      "stream",     "event",
                                      "stream_wait", "stream_query", "event_query"};
  return pick(names, std::size(names), uint8_t(kind & ~trace::kSyncOpen), "unknown");
}

const char* kernel_kind_name(uint8_t kind) {
  static const char* const names[] = {"kernel", "cooperative", "graph"};
  return pick(names, std::size(names), kind, "unknown");
}

// ---- trace files -----------------------------------------------------------------------------

namespace {

// Natural order: runs of digits compare as numbers, so rank2 sorts before rank10.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (isdigit(static_cast<unsigned char>(a[i])) && isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i0 = i, j0 = j;
      while (i < a.size() && isdigit(static_cast<unsigned char>(a[i]))) ++i;
      while (j < b.size() && isdigit(static_cast<unsigned char>(b[j]))) ++j;
      std::string_view x = std::string_view(a).substr(i0, i - i0);
      std::string_view y = std::string_view(b).substr(j0, j - j0);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

namespace {

// A merged job file's members as FILE/<member>; the file itself when its index does not read
// (opening it then says why).
void add_members(const std::string& file, std::vector<std::string>* out) {
  job::Index idx;
  if (!job::read_index(file, &idx, nullptr) || idx.members.empty()) {
    out->push_back(file);
    return;
  }
  for (const job::Member& m : idx.members) out->push_back(file + "/" + m.name);
}

}  // namespace

std::vector<std::string> list_trace_files(const std::string& dir_or_file) {
  struct stat st {};
  if (stat(dir_or_file.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::vector<std::string> one;
    if (S_ISREG(st.st_mode) && job::is_job_file(dir_or_file)) add_members(dir_or_file, &one);
    else one.push_back(dir_or_file);
    return one;
  }
  std::vector<std::string> files;
  DIR* d = opendir(dir_or_file.c_str());
  if (!d) return files;
  std::string prefix = dir_or_file;
  if (prefix.back() != '/') prefix += '/';
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (!ends_with(name, ".cutrace")) continue;
    std::string path = prefix + name;
    if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(path);
  }
  closedir(d);
  std::sort(files.begin(), files.end(), natural_less);
  std::vector<std::string> out;
  for (const std::string& f : files) {
    if (job::is_job_file(f)) add_members(f, &out);
    else out.push_back(f);
  }
  return out;
}

std::string open_error_reason(const std::string& file, const std::string& err) {
  if (err.size() > file.size() + 2 && err.compare(0, file.size(), file) == 0 && err.compare(file.size(), 2, ": ") == 0)
    return err.substr(file.size() + 2);
  const std::string cannot = "cannot open " + file + ": ";
  if (err.compare(0, cannot.size(), cannot) == 0) return "cannot open: " + err.substr(cannot.size());
  return err;
}

TraceSet::TraceSet(const std::string& dir_or_file) : where_(dir_or_file), files_(list_trace_files(dir_or_file)) {}

}  // namespace cutrace
