#include "collector/stacks.h"
#include <elf.h>
#include <link.h>
#include <unistd.h>
#include <algorithm>
#include <climits>
#include <cstring>

namespace cutrace {

namespace {

// GNU build-id from the object's PT_NOTE segments, which the loader has mapped.
std::string build_id(const struct dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (end - p >= ptrdiff_t(sizeof(ElfW(Nhdr)))) {
      ElfW(Nhdr) nh;
      memcpy(&nh, p, sizeof nh);
      const char* name = p + sizeof nh;
      const char* desc = name + ((nh.n_namesz + 3) & ~3u);
      const char* next = desc + ((nh.n_descsz + 3) & ~3u);
      if (next > end) break;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        static const char hex[] = "0123456789abcdef";
        std::string s;
        for (uint32_t k = 0; k < nh.n_descsz; ++k) {
          unsigned char c = static_cast<unsigned char>(desc[k]);
          s += hex[c >> 4];
          s += hex[c & 15];
        }
        return s;
      }
      p = next;
    }
  }
  return {};
}

std::string self_exe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string("[main program]");
}

int collect(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<LoadedModule>*>(data);
  LoadedModule m;
  m.lo = UINT64_MAX;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    m.lo = std::min<uint64_t>(m.lo, a);
    m.hi = std::max<uint64_t>(m.hi, a + ph.p_memsz);
  }
  if (m.lo >= m.hi) return 0;
  m.base = info->dlpi_addr;
  m.path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : (out->empty() ? self_exe() : "[unnamed]");
  if (m.path.rfind("linux-vdso", 0) == 0 || m.path.rfind("linux-gate", 0) == 0) m.path = "[vdso]";
  m.build_id = build_id(info);
  out->push_back(std::move(m));
  return 0;
}

}  // namespace

std::vector<LoadedModule> loaded_modules() {
  std::vector<LoadedModule> mods;
  dl_iterate_phdr(collect, &mods);
  return mods;
}

bool ModuleMap::set_modules(std::vector<LoadedModule> mods) {
  std::sort(mods.begin(), mods.end(), [](const LoadedModule& a, const LoadedModule& b) { return a.lo < b.lo; });
  bool changed = mods.size() != mods_.size();
  std::vector<Mod> next;
  next.reserve(mods.size());
  for (LoadedModule& m : mods) {
    Mod x;
    auto key = std::make_pair(m.path, m.base);
    auto it = ids_.find(key);
    if (it == ids_.end()) {
      changed = true;
      it = ids_.emplace(key, uint32_t(ids_.size() + 1)).first;
    }
    x.id = it->second;
    for (const Mod& old : mods_)
      if (old.id == x.id) x.written = old.written;
    x.m = std::move(m);
    next.push_back(std::move(x));
  }
  mods_.swap(next);
  return changed;
}

ModuleMap::Mod* ModuleMap::find(uint64_t pc) {
  auto it = std::upper_bound(mods_.begin(), mods_.end(), pc, [](uint64_t v, const Mod& m) { return v < m.m.lo; });
  if (it == mods_.begin()) return nullptr;
  --it;
  return pc < it->m.hi ? &*it : nullptr;
}

uint32_t ModuleMap::resolve(uint64_t pc, uint64_t* offset) {
  Mod* m = find(pc);
  if (!m && !refreshed_) {
    refreshed_ = true;
    ++refreshes_;
    set_modules(loaded_modules());
    m = find(pc);
  }
  if (!m) {
    *offset = pc;
    return 0;
  }
  if (!m->written) {
    trace::ModuleRec r{};
    r.module = m->id;
    r.path_id = w_.intern(m->m.path);
    r.base = m->m.base;
    r.size = m->m.hi - m->m.lo;
    r.build_id_id = m->m.build_id.empty() ? 0 : w_.intern(m->m.build_id);
    w_.add(r, trace::RecType::Module);
    m->written = true;
  }
  *offset = pc - m->m.base;
  return m->id;
}

std::vector<uint64_t> StackInterner::raw_pcs(uint32_t id) const {
  std::vector<uint64_t> pcs;
  for (const auto& [key, sid] : by_pcs_) {
    if (sid != id || key.size() < sizeof(uint32_t)) continue;
    uint32_t n = 0;  // the key: native frame count, the PCs, then the Python frames
    std::memcpy(&n, key.data(), sizeof n);
    pcs.resize(std::min<size_t>(n, (key.size() - sizeof n) / sizeof(uint64_t)));
    std::memcpy(pcs.data(), key.data() + sizeof n, pcs.size() * sizeof(uint64_t));
    break;
  }
  return pcs;
}

uint32_t StackInterner::intern_frames(const uint64_t* pcs, uint32_t n, const PyRawFrame* py, uint32_t py_n) {
  if (n == 0 && py_n == 0) return 0;
  key_.assign(reinterpret_cast<const char*>(&n), sizeof n);  // reuses its buffer
  key_.append(reinterpret_cast<const char*>(pcs), n * sizeof(uint64_t));
  if (py_n) {
    key_.append(reinterpret_cast<const char*>(&py_n), sizeof py_n);
    key_.append(reinterpret_cast<const char*>(py), py_n * sizeof(PyRawFrame));
  }
  auto hit = by_pcs_.find(key_);
  if (hit != by_pcs_.end()) return hit->second;
  trace::StackFrame frames[trace::kMaxStackFrames];
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t off = 0;
    frames[i].module = modules_.resolve(pcs[i], &off);
    frames[i].offset = off;
  }
  trace::PyFrame pf[trace::kMaxPyFrames];
  for (uint32_t i = 0; i < py_n; ++i) pf[i] = py_.frame(py[i]);
  // The same frames may come from other raw PCs (a library unloaded and loaded elsewhere).
  std::string key(reinterpret_cast<const char*>(frames), n * sizeof(trace::StackFrame));
  if (py_n) {
    key.append(reinterpret_cast<const char*>(&py_n), sizeof py_n);
    key.append(reinterpret_cast<const char*>(pf), py_n * sizeof(trace::PyFrame));
  }
  auto it = by_frames_.find(key);
  if (it == by_frames_.end()) {
    it = by_frames_.emplace(key, uint32_t(by_frames_.size() + 1)).first;
    if (py_n) {
      trace::PyStackRec s{};
      s.h.type = uint16_t(trace::RecType::PyStack);
      s.stack = it->second;
      s.py_depth = uint16_t(py_n);
      s.depth = uint16_t(n);
      char tail[sizeof pf + sizeof frames];
      memcpy(tail, pf, py_n * sizeof(trace::PyFrame));
      memcpy(tail + py_n * sizeof(trace::PyFrame), frames, n * sizeof(trace::StackFrame));
      w_.append_var(&s, sizeof s, tail, py_n * sizeof(trace::PyFrame) + n * sizeof(trace::StackFrame));
    } else {
      trace::StackRec s{};
      s.h.type = uint16_t(trace::RecType::Stack);
      s.stack = it->second;
      s.depth = uint16_t(n);
      w_.append_var(&s, sizeof s, frames, n * sizeof(trace::StackFrame));
    }
  }
  // Raw PCs are only valid while the same objects stay loaded at the same addresses.
  by_pcs_.emplace(key_, it->second);
  return it->second;
}

}  // namespace cutrace
