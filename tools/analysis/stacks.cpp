#include "tools/analysis/stacks.h"
#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "trace/safe_file.h"

namespace cutrace {

bool StackTable::absorb(const Record& rec, const TraceReader& r) {
  if (rec.type() == trace::RecType::Module) {
    const auto& m = rec.as<trace::ModuleRec>();
    uint32_t id = m.module;  // packed record: copy before binding a reference
    ModuleInfo& info = modules_[id];
    info.path = std::string(r.str(m.path_id));
    info.build_id = m.build_id_id ? std::string(r.str(m.build_id_id)) : std::string();
    info.base = m.base;
    info.size = m.size;
    return true;
  }
  if (rec.type() == trace::RecType::PyCode) {
    const auto& c = rec.as<trace::PyCodeRec>();
    uint32_t id = c.code;  // packed record: copy before binding a reference
    PyCodeInfo& info = py_codes_[id];
    info.file = std::string(r.str(c.file_id));
    info.name = std::string(r.str(c.name_id));
    info.qualname = std::string(r.str(c.qualname_id));
    info.first_line = c.first_line;
    return true;
  }
  if (rec.type() == trace::RecType::PyStack) {
    const auto& s = rec.as<trace::PyStackRec>();
    std::string_view tail = rec.tail(sizeof(trace::PyStackRec));
    size_t py = std::min<size_t>(s.py_depth, tail.size() / sizeof(trace::PyFrame));
    tail.remove_prefix(py * sizeof(trace::PyFrame));
    size_t depth = s.depth, n = std::min<size_t>(depth, tail.size() / sizeof(trace::StackFrame));
    uint32_t id = s.stack;  // packed record: copy before binding a reference
    std::vector<trace::PyFrame>& pf = py_stacks_[id];
    pf.resize(py);
    if (py) std::memcpy(pf.data(), rec.tail(sizeof(trace::PyStackRec)).data(), py * sizeof(trace::PyFrame));
    std::vector<trace::StackFrame>& frames = stacks_[id];
    frames.resize(n);
    if (n) std::memcpy(frames.data(), tail.data(), n * sizeof(trace::StackFrame));
    return true;
  }
  if (rec.type() == trace::RecType::Stack) {
    const auto& s = rec.as<trace::StackRec>();
    std::string_view tail = rec.tail(sizeof(trace::StackRec));
    size_t depth = s.depth, n = std::min<size_t>(depth, tail.size() / sizeof(trace::StackFrame));
    uint32_t id = s.stack;  // packed record: copy before binding a reference
    std::vector<trace::StackFrame>& frames = stacks_[id];
    frames.resize(n);
    if (n) std::memcpy(frames.data(), tail.data(), n * sizeof(trace::StackFrame));
    return true;
  }
  return false;
}

const std::vector<trace::StackFrame>* StackTable::stack(uint32_t id) const {
  auto it = stacks_.find(id);
  return it == stacks_.end() ? nullptr : &it->second;
}

const std::vector<trace::PyFrame>* StackTable::py_stack(uint32_t id) const {
  auto it = py_stacks_.find(id);
  return it == py_stacks_.end() ? nullptr : &it->second;
}

const PyCodeInfo* StackTable::py_code(uint32_t id) const {
  auto it = py_codes_.find(id);
  return it == py_codes_.end() ? nullptr : &it->second;
}

bool py_frame_in_packages(const std::string& file, const std::string& packages) {
  if (file.empty() || file[0] == '<') return false;  // <string>, <frozen ...>: exec'd or built-in
  std::vector<std::string> parts;
  for (size_t a = 0, b; a < file.size(); a = b + 1) {
    b = file.find('/', a);
    if (b == std::string::npos) b = file.size();
    if (b > a) parts.push_back(file.substr(a, b - a));
  }
  for (size_t a = 0, b; a <= packages.size(); a = b + 1) {
    b = packages.find(',', a);
    if (b == std::string::npos) b = packages.size();
    std::string p = packages.substr(a, b - a);
    if (p.empty()) continue;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      if (p == "stdlib") {
        // .../lib/pythonX.Y/x.py, not .../pythonX.Y/site-packages/ or dist-packages/
        bool lib = parts[k].rfind("python3", 0) == 0 && k > 0 && parts[k - 1].rfind("lib", 0) == 0;
        bool site = k + 2 < parts.size() && (parts[k + 1] == "site-packages" || parts[k + 1] == "dist-packages");
        if (lib && !site) return true;
      } else if (parts[k] == p) {
        return true;
      }
    }
  }
  return false;
}

const ModuleInfo* StackTable::module(uint32_t id) const {
  auto it = modules_.find(id);
  return it == modules_.end() ? nullptr : &it->second;
}

std::string frame_text(const SymFrame& f) {
  char off[32];
  if (f.python) {
    size_t slash = f.module.rfind('/');
    std::string file = slash == std::string::npos ? f.module : f.module.substr(slash + 1);
    return file + ":" + (f.line ? std::to_string(f.line) : std::string("?")) + " in " + f.function;
  }
  if (f.module.empty()) {
    snprintf(off, sizeof off, "0x%llx", (unsigned long long)f.offset);
    return f.function.empty() ? off : f.function + " (" + off + ")";
  }
  snprintf(off, sizeof off, "+0x%llx", (unsigned long long)f.offset);
  size_t slash = f.module.rfind('/');
  std::string where = (slash == std::string::npos ? f.module : f.module.substr(slash + 1)) + off;
  if (!f.file.empty() && f.line) return site_text(f) + " (" + where + ")";
  return f.function.empty() ? where : f.function + " (" + where + ")";
}

std::string site_text(const SymFrame& f) {
  if (f.python || f.file.empty() || !f.line) return frame_text(f);
  size_t slash = f.file.rfind('/');
  std::string src = (slash == std::string::npos ? f.file : f.file.substr(slash + 1)) + ":" + std::to_string(f.line);
  return f.function.empty() ? src : src + " in " + f.function;
}

namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  free(d);
  return out;
}

std::string note_build_id(Elf* e) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(e, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    GElf_Nhdr nh;
    size_t off = 0, name_off = 0, desc_off = 0;
    while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      const char* base = static_cast<const char*>(data->d_buf);
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(base + name_off, "GNU", 4) == 0) {
        static const char hex[] = "0123456789abcdef";
        std::string s;
        for (size_t k = 0; k < nh.n_descsz; ++k) {
          unsigned char c = static_cast<unsigned char>(base[desc_off + k]);
          s += hex[c >> 4];
          s += hex[c & 15];
        }
        return s;
      }
    }
  }
  return {};
}

// By address; at one address the sized one, then the first met (.symtab and .dynsym repeat).
void sort_unique(std::vector<ElfSymbol>* syms) {
  std::stable_sort(syms->begin(), syms->end(), [](const ElfSymbol& a, const ElfSymbol& b) {
    return a.addr != b.addr ? a.addr < b.addr : a.size > b.size;
  });
  syms->erase(
      std::unique(syms->begin(), syms->end(), [](const ElfSymbol& a, const ElfSymbol& b) { return a.addr == b.addr; }),
      syms->end());
}

}  // namespace

bool read_elf_symbols(const std::string& path, std::vector<ElfSymbol>* syms, std::string* build_id, std::string* why) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    *why = "libelf unusable";
    return false;
  }
  int fd = open_regular(path.c_str());  // a path from a trace: a FIFO there must not block
  if (fd < 0) {
    *why = std::string("cannot open: ") + open_regular_error(errno);
    return false;
  }
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  if (!e || elf_kind(e) != ELF_K_ELF) {
    *why = "not an ELF file";
    if (e) elf_end(e);
    close(fd);
    return false;
  }
  *build_id = note_build_id(e);
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(e, scn)) != nullptr) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym s;
      if (!gelf_getsym(data, int(i), &s)) break;
      if (GELF_ST_TYPE(s.st_info) != STT_FUNC || s.st_shndx == SHN_UNDEF || s.st_value == 0) continue;
      const char* name = elf_strptr(e, sh.sh_link, s.st_name);
      if (!name || !*name) continue;
      syms->push_back({s.st_value, s.st_size, name});  // demangled when a frame uses it
    }
  }
  elf_end(e);
  close(fd);
  sort_unique(syms);
  return true;
}

const ElfSymbol* find_symbol(const std::vector<ElfSymbol>& syms, uint64_t addr) {
  auto it = std::upper_bound(syms.begin(), syms.end(), addr, [](uint64_t a, const ElfSymbol& s) { return a < s.addr; });
  if (it == syms.begin()) return nullptr;
  --it;
  if (it->size && addr >= it->addr + it->size) return nullptr;
  return &*it;
}

Symbolizer::Syms& Symbolizer::load(const ModuleInfo& m) {
  auto key = std::make_pair(m.path, m.build_id);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Syms& s = cache_[key];
  std::string file_id, why;
  if (m.path.empty() || m.path[0] != '/') return s;  // [vdso], [main program]: no file
  if (!read_elf_symbols(m.path, &s.v, &file_id, &why)) {
    problems_.push_back(m.path + ": " + why);
  } else if (!m.build_id.empty() && !file_id.empty() && file_id != m.build_id) {
    s.v.clear();
    problems_.push_back(m.path + ": build-id " + file_id + " differs from the recorded " + m.build_id +
                        " (the file changed since the run): not symbolised");
  } else {
    s.usable = true;
  }
  bool hex_id = m.build_id.find_first_not_of("0123456789abcdef") == std::string::npos;  // names a path
  if (m.build_id.size() > 2 && hex_id && (s.v.empty() || file_id == m.build_id)) {
    // Separate debug symbols (Debian's -dbgsym packages) when installed.
    std::string dbg = "/usr/lib/debug/.build-id/" + m.build_id.substr(0, 2) + "/" + m.build_id.substr(2) + ".debug";
    std::vector<ElfSymbol> extra;
    std::string dbg_id, dbg_why;
    if (access(dbg.c_str(), R_OK) == 0 && read_elf_symbols(dbg, &extra, &dbg_id, &dbg_why)) {
      if (dbg_id.empty() || dbg_id == m.build_id) s.debug_file = dbg;
      s.v.insert(s.v.end(), extra.begin(), extra.end());
      sort_unique(&s.v);
    }
  }
  return s;
}

SymFrame Symbolizer::frame(const StackTable& t, const trace::StackFrame& f) {
  SymFrame out;
  out.offset = f.offset;
  const ModuleInfo* m = f.module ? t.module(f.module) : nullptr;
  if (!m) return out;
  out.module = m->path;
  // A return address points after the call: look up the call instruction's byte.
  uint64_t at = f.offset ? f.offset - 1 : 0;
  Syms& syms = load(*m);
  const ElfSymbol* s = find_symbol(syms.v, at);
  if (s) out.function = demangle(s->name.c_str());
  source_line(syms, *m, at, &out);
  return out;
}

void Symbolizer::source_line(Syms& s, const ModuleInfo& m, uint64_t addr, SymFrame* out) {
  if (!s.dwarf_tried) {
    s.dwarf_tried = true;
    // The module's own DWARF when it has it, else the separate debug file's; a file whose
    // build-id differs from the recorded one gives no lines (its addresses mean other code).
    std::string why;
    for (const std::string* path : {&m.path, static_cast<const std::string*>(&s.debug_file)}) {
      if (path->empty() || (path == &m.path && !s.usable)) continue;
      auto d = std::make_unique<DwarfLines>();
      if (d->open(*path, &why)) {
        s.dwarf = std::move(d);
        break;
      }
    }
  }
  if (!s.dwarf) return;
  auto it = s.lines.find(addr);
  if (it == s.lines.end()) {
    std::pair<std::string, uint32_t> v;
    if (!s.dwarf->lookup(addr, &v.first, &v.second)) v = {};
    it = s.lines.emplace(addr, std::move(v)).first;
  }
  out->file = it->second.first;
  out->line = it->second.second;
}

std::vector<SymFrame> Symbolizer::stack(const StackTable& t, uint32_t id) {
  std::vector<SymFrame> out;
  if (const auto* py = t.py_stack(id))
    for (const trace::PyFrame& p : *py) {
      SymFrame f;
      f.python = true;
      f.line = p.line;
      if (const PyCodeInfo* c = t.py_code(p.code)) f.module = c->file, f.function = c->qualname;
      else f.module = "?", f.function = "?";
      out.push_back(std::move(f));
    }
  if (const auto* frames = t.stack(id))
    for (const trace::StackFrame& f : *frames) out.push_back(frame(t, f));
  return out;
}

}  // namespace cutrace
