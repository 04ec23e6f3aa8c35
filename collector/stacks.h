// Call stacks on the collector thread: maps the raw PCs the shim captured (shim/backtrace.h) to
// (module, offset) and interns each distinct stack once per file. The map of loaded objects is
// a dl_iterate_phdr snapshot, taken again when a PC falls outside every known object (a library
// dlopen'ed since), at most once per drain cycle. Writes Module records on first use of a
// module and a Stack record on first sight of a stack, before the record that refers to it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "collector/py_code.h"
#include "trace/format.h"
#include "trace/writer.h"

namespace cutrace {

// One loaded ELF object, as the dynamic loader reports it.
struct LoadedModule {
  std::string path;         // "" for the main program is replaced by /proc/self/exe's target
  uint64_t base = 0;        // load bias (dlpi_addr)
  uint64_t lo = 0, hi = 0;  // lowest and highest address of its PT_LOAD segments
  std::string build_id;     // lowercase hex, "" if none
};
std::vector<LoadedModule> loaded_modules();  // dl_iterate_phdr snapshot

class ModuleMap {
 public:
  explicit ModuleMap(TraceWriter& w) : w_(w) {}
  // Module id and offset of `pc` (a return address); the id is 0 (offset = pc) when no loaded
  // object contains it even after a refresh. Writes the Module record on first use.
  uint32_t resolve(uint64_t pc, uint64_t* offset);
  void new_cycle() { refreshed_ = false; }
  // Replaces the snapshot (tests); returns true if the set of (path, base) changed.
  bool set_modules(std::vector<LoadedModule> mods);
  uint64_t refreshes() const { return refreshes_; }

 private:
  struct Mod {
    LoadedModule m;
    uint32_t id = 0;
    bool written = false;
  };
  Mod* find(uint64_t pc);
  TraceWriter& w_;
  std::vector<Mod> mods_;                                     // sorted by lo
  std::map<std::pair<std::string, uint64_t>, uint32_t> ids_;  // (path, base) -> id
  bool refreshed_ = false;
  uint64_t refreshes_ = 0;
};

class StackInterner {
 public:
  explicit StackInterner(TraceWriter& w) : modules_(w), py_(w), w_(w) {}
  // Interns the innermost-first raw PCs, leading frames in the shim's own code (`skip(pc)`
  // true) removed and at most trace::kMaxStackFrames kept, with the `py_n` Python frames (a
  // PyStack record when there are any, else a Stack record). Returns the stack id, 0 if no frame
  // is left.
  template <class Skip>
  uint32_t intern(const uint64_t* pcs, uint32_t n, Skip&& skip, const PyRawFrame* py = nullptr, uint32_t py_n = 0) {
    uint32_t first = 0;
    while (first < n && skip(pcs[first])) ++first;
    return intern_frames(pcs + first, std::min<uint32_t>(n - first, trace::kMaxStackFrames), py,
                         std::min<uint32_t>(py_n, trace::kMaxPyFrames));
  }
  uint32_t intern_frames(const uint64_t* pcs, uint32_t n, const PyRawFrame* py = nullptr, uint32_t py_n = 0);
  ModuleMap& modules() { return modules_; }
  size_t stacks() const { return by_frames_.size(); }
  // The raw PCs of one interned stack (a scan: for the rare hang report), empty if unknown.
  std::vector<uint64_t> raw_pcs(uint32_t id) const;

 private:
  ModuleMap modules_;
  PyCodeTable py_;
  TraceWriter& w_;
  std::unordered_map<std::string, uint32_t> by_pcs_;     // raw PCs (bytes) -> id
  std::unordered_map<std::string, uint32_t> by_frames_;  // resolved frames (bytes) -> id
  std::string key_;                                      // lookup key, kept to avoid an allocation per call
};

}  // namespace cutrace
