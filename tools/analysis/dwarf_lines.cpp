#include "tools/analysis/dwarf_lines.h"
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trace/safe_file.h"

namespace cutrace {

DwarfLines::~DwarfLines() {
  if (dw_) dwarf_end(dw_);
  if (elf_) elf_end(elf_);
  if (fd_ >= 0) close(fd_);
}

bool DwarfLines::open(const std::string& path, std::string* why) {
  fd_ = open_regular(path.c_str());  // a path from a trace: a FIFO there must not block
  if (fd_ < 0) {
    *why = std::string("cannot open: ") + open_regular_error(errno);
    return false;
  }
  // Mapped, not read: a debug file can be large, and only the line tables used are touched
  // (libelf checks every section against the file's size).
  if (elf_version(EV_CURRENT) == EV_NONE || !(elf_ = elf_begin(fd_, ELF_C_READ_MMAP, nullptr)) ||
      elf_kind(elf_) != ELF_K_ELF) {
    *why = "not an ELF file";
    return false;
  }
  dw_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
  if (!dw_) {
    *why = dwarf_errmsg(-1);
    return false;
  }
  // The units' address ranges (DW_AT_low_pc/high_pc or DW_AT_ranges): .debug_aranges is often
  // absent (clang), so the table is built from the unit DIEs themselves.
  Dwarf_CU* cu = nullptr;
  Dwarf_Die cudie;
  uint8_t unit_type = 0;
  size_t units = 0;
  while (units++ < kMaxUnits && ranges_.size() < kMaxRanges &&
         dwarf_get_units(dw_, cu, &cu, nullptr, &unit_type, &cudie, nullptr) == 0) {
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial && unit_type != DW_UT_skeleton) continue;
    Dwarf_Addr base = 0, lo = 0, hi = 0;
    ptrdiff_t off = 0;
    while (ranges_.size() < kMaxRanges && (off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0)
      if (hi > lo) ranges_.push_back({lo, hi, dwarf_dieoffset(&cudie)});
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  if (ranges_.empty()) {
    *why = "no DWARF compile units with addresses";
    return false;
  }
  return true;
}

bool DwarfLines::lookup(uint64_t addr, std::string* file, uint32_t* line) const {
  if (!dw_ || ranges_.empty()) return false;
  // Ranges may overlap (LTO, bad DWARF): try the few that start nearest below addr.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), addr, [](uint64_t a, const Range& r) { return a < r.lo; });
  for (int tries = 0; it != ranges_.begin() && tries < 8; ++tries) {
    --it;
    if (addr >= it->hi) continue;
    Dwarf_Die cudie;
    if (!dwarf_offdie(dw_, it->die, &cudie)) continue;
    Dwarf_Line* l = dwarf_getsrc_die(&cudie, addr);
    int lineno = 0;
    const char* src = l ? dwarf_linesrc(l, nullptr, nullptr) : nullptr;
    if (!src || dwarf_lineno(l, &lineno) != 0 || lineno <= 0) continue;
    *file = src;
    // A relative name is relative to the unit's compilation directory.
    Dwarf_Attribute attr;
    const char* dir = src[0] == '/' ? nullptr : dwarf_formstring(dwarf_attr(&cudie, DW_AT_comp_dir, &attr));
    if (dir && *dir) *file = std::string(dir) + (dir[std::strlen(dir) - 1] == '/' ? "" : "/") + src;
    *line = uint32_t(lineno);
    return true;
  }
  return false;
}

}  // namespace cutrace
