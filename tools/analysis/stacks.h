// Call stacks in the tools: the Module and Stack records of a trace (collector/stacks.h wrote
// them) and their symbolisation from the modules' ELF symbol tables (.symtab, else .dynsym;
// also the separate debug file /usr/lib/debug/.build-id/xx/yyyy.debug when installed), read
// with elfutils' libelf and cached per module; C++ names are demangled. Source lines come from
// the module's DWARF (else the debug file's) through libdw (dwarf_lines.h), opened on first use. Symbolisation happens
// here, on the machine that runs the tool: the module files must be there (same paths), and a
// module whose build-id differs from the recorded one is not symbolised (frames keep their
// module + offset). PyCode and PyStack records add the Python frames the shim read
// (shim/py_stack.h): a stack lists them first (innermost first), then its native frames.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
#include "tools/analysis/dwarf_lines.h"
#include "trace/reader.h"

namespace cutrace {

struct PyCodeInfo {
  std::string file, name, qualname;
  uint32_t first_line = 0;
};

struct ModuleInfo {
  std::string path;
  std::string build_id;  // lowercase hex, "" = not recorded
  uint64_t base = 0;
  uint64_t size = 0;
};

// The Module and Stack records of one file, fed in file order (each precedes its first use).
class StackTable {
 public:
  // Keeps Module, Stack, PyCode and PyStack records; returns false for any other record.
  bool absorb(const Record& rec, const TraceReader& r);
  const std::vector<trace::StackFrame>* stack(uint32_t id) const;  // nullptr if unknown
  const std::vector<trace::PyFrame>* py_stack(uint32_t id) const;  // nullptr if none
  const ModuleInfo* module(uint32_t id) const;                     // nullptr if unknown
  const PyCodeInfo* py_code(uint32_t id) const;                    // nullptr if unknown
  size_t stacks() const { return stacks_.size(); }
  size_t modules() const { return modules_.size(); }

 private:
  std::unordered_map<uint32_t, ModuleInfo> modules_;
  std::unordered_map<uint32_t, std::vector<trace::StackFrame>> stacks_;
  std::unordered_map<uint32_t, std::vector<trace::PyFrame>> py_stacks_;
  std::unordered_map<uint32_t, PyCodeInfo> py_codes_;
};

// OpStack records: each operation's call stack id, kept from its OpStack record (which comes
// first, for a GPU operation possibly by much) until the operation's own record takes it.
class OpStacks {
 public:
  void link(const trace::OpStackRec& o) { pending_[uint64_t(o.corr)] = o.stack; }  // copy: packed field
  uint32_t take(uint64_t corr) {  // 0 = no stack recorded for this operation
    if (pending_.empty()) return 0;
    auto it = pending_.find(corr);
    if (it == pending_.end()) return 0;
    uint32_t id = it->second;
    pending_.erase(it);
    return id;
  }
  void clear() { pending_.clear(); }

 private:
  std::unordered_map<uint64_t, uint32_t> pending_;
};

struct SymFrame {
  std::string function;  // demangled; "" when unknown; a Python frame's co_qualname
  std::string module;    // path; "" when the PC was in no module; a Python frame's co_filename
  uint64_t offset = 0;   // in the module (return address), or the raw PC without a module
  bool python = false;   // a Python frame: module:line in function
  uint32_t line = 0;     // the source line (0 = unknown): Python's, or native from DWARF
  std::string file;      // native frames: the source file from the module's DWARF ("" = none)
};
// "function (libfoo.so+0x1a2b)", "libfoo.so+0x1a2b" or "0x7f...": the module's file name only.
// Native frames with a DWARF line: "copies.cpp:26 in main (copies+0x25c2)".
// Python frames: "train.py:87 in step" (the file name only).
std::string frame_text(const SymFrame& f);
// A call site's label: "copies.cpp:26 in main" for a native frame with a DWARF line, else
// frame_text(f).
std::string site_text(const SymFrame& f);
// Whether a Python frame's file belongs to one of `packages` (comma-separated names: a path
// component equal to one, "stdlib" for the standard library, "<frozen ...>" and "<string>"
// files never count as stdlib). The innermost Python frame not in them is the call site.
bool py_frame_in_packages(const std::string& file, const std::string& packages);
// The default of `summary --python-skip`.
inline constexpr const char* kDefaultPySkip = "torch,triton,jax,stdlib";

struct ElfSymbol {
  uint64_t addr = 0;
  uint64_t size = 0;
  std::string name;  // as in the symbol table (mangled); Symbolizer demangles the ones it uses
};

// The function symbols of an ELF file (both tables, sorted by address, duplicates removed) and
// its GNU build-id. False (with *why) if the file cannot be read as ELF.
bool read_elf_symbols(const std::string& path, std::vector<ElfSymbol>* syms, std::string* build_id, std::string* why);
// The symbol containing `addr`, or nullptr (a sized symbol must contain it; an unsized one is
// taken when it is the nearest below).
const ElfSymbol* find_symbol(const std::vector<ElfSymbol>& syms, uint64_t addr);

class Symbolizer {
 public:
  SymFrame frame(const StackTable& t, const trace::StackFrame& f);
  std::vector<SymFrame> stack(const StackTable& t, uint32_t id);  // empty if unknown
  // Modules that could not be symbolised: "path: why", once each.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  struct Syms {
    std::vector<ElfSymbol> v;
    bool usable = false;     // the file is the recorded one (readable, build-id not different)
    std::string debug_file;  // the separate debug file, "" if none
    bool dwarf_tried = false;
    std::unique_ptr<DwarfLines> dwarf;                                     // null: no DWARF
    std::unordered_map<uint64_t, std::pair<std::string, uint32_t>> lines;  // address -> file, line
  };
  Syms& load(const ModuleInfo& m);
  void source_line(Syms& s, const ModuleInfo& m, uint64_t addr, SymFrame* out);
  std::map<std::pair<std::string, std::string>, Syms> cache_;  // (path, build id)
  std::vector<std::string> problems_;
};

}  // namespace cutrace
