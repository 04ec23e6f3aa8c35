// Native source lines from a module's DWARF (.debug_info/.debug_line), read with elfutils' libdw
// in the tools only. One DwarfLines per module file: it keeps the file open and a table of its
// compile units' address ranges; lookups map an address in the module's own address space (the
// offsets the symboliser uses) to file:line. Everything read is bounded (units, ranges); a file
// without DWARF, or with DWARF libdw rejects, gives no lines and no error beyond `why`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

struct Dwarf;
struct Elf;

namespace cutrace {

class DwarfLines {
 public:
  // Bounds on what one module's table may hold; past them the rest of the module has no lines.
  static constexpr size_t kMaxUnits = 1u << 20;
  static constexpr size_t kMaxRanges = 1u << 22;

  DwarfLines() = default;
  DwarfLines(const DwarfLines&) = delete;
  DwarfLines& operator=(const DwarfLines&) = delete;
  ~DwarfLines();

  // Reads `path`'s DWARF unit table. False (with *why) when the file has none or cannot be read.
  bool open(const std::string& path, std::string* why);
  // The source file (as the line table names it, joined to the unit's DW_AT_comp_dir when
  // relative) and line of `addr`; false
  // when no unit covers it or its line table has no row for it.
  bool lookup(uint64_t addr, std::string* file, uint32_t* line) const;
  size_t ranges() const { return ranges_.size(); }

 private:
  struct Range {
    uint64_t lo, hi;  // [lo, hi)
    uint64_t die;     // offset of the unit's DIE
  };
  int fd_ = -1;
  Elf* elf_ = nullptr;
  Dwarf* dw_ = nullptr;
  std::vector<Range> ranges_;  // sorted by lo
};

}  // namespace cutrace
