// A merged job file (`cutrace merge DIR -o FILE`, docs/FORMAT.md "Merged job files"): every
// rank's trace file, byte for byte, behind an index that names each member and gives the clock
// offset that puts it on the job's common clock. The reader opens a member as `FILE/<member>`
// (list_trace_files lists them), so every tool reads a merged file as it reads a directory.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cutrace::job {

inline constexpr char kMagic[8] = {'C', 'U', 'T', 'R', 'J', 'O', 'B', '\0'};
inline constexpr uint16_t kVersionMajor = 1;
inline constexpr uint16_t kVersionMinor = 0;
inline constexpr uint32_t kMaxIndex = 64u << 20;  // a larger index is corrupt

#pragma pack(push, 1)
struct Header {  // at offset 0
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;     // sizeof(Header)
  uint32_t index_size;      // bytes of the index, right after the header
  uint32_t index_checksum;  // xxh32 (seed 0) of those bytes
  uint32_t members;
  uint32_t pad;
};
static_assert(sizeof(Header) == 32);
struct MemberHead {      // in the index, once per member, followed by its name and properties
  uint64_t data_offset;  // from the start of the file; the member's trace file bytes start here
  uint64_t data_size;
  int64_t clock_offset_ns;  // common ns = the member's CLOCK_MONOTONIC ns + clock_offset_ns
  uint32_t name_size;
  uint32_t props_size;
};
static_assert(sizeof(MemberHead) == 32);
#pragma pack(pop)

using Props = std::vector<std::pair<std::string, std::string>>;  // "key=value\n" each on disk

struct Member {
  std::string name;  // the trace file's own name: no '/', unique in the job
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  int64_t clock_offset_ns = 0;
  Props props;
};

struct Index {
  uint16_t version_major = 0, version_minor = 0;
  std::vector<Member> members;
  Props props;                                        // the job's: after the last member, up to the end of the index
  std::string_view prop(std::string_view key) const;  // "" if absent (the first of that key)
};

// True when the file starts with kMagic (cheap: reads 8 bytes).
bool is_job_file(const std::string& path);
// Reads and checks the index: header, checksum, members inside the file.
bool read_index(const std::string& path, Index* out, std::string* err);
// "FILE/member" -> FILE and member, when FILE is a job file; false otherwise.
bool split_member_path(const std::string& path, std::string* file, std::string* member);
std::string_view prop(const Props& p, std::string_view key);

// Where a trace's bytes are: a plain file (offset 0, its size) or a member FILE/<member>.
struct Source {
  std::string file;
  uint64_t offset = 0, size = 0;
};
bool find_source(const std::string& path, Source* out, std::string* err);

// Writes the job file `out` from `members` (their bytes copied from `sources`, one each, in
// order): the index first, each member's bytes at an 8-aligned offset. Written to a temporary
// name and renamed, so that a failed merge leaves no partial file.
bool write_job_file(const std::string& out, const std::vector<Member>& members, const std::vector<Source>& sources,
                    const Props& job_props, std::string* err);

}  // namespace cutrace::job
