#include "shim/binding.h"
#include <cuda.h>
#include <dlfcn.h>
#include <cstring>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>
#include "collector/collector.h"
#include "runtime/config.h"
#include "runtime/driver.h"

extern "C" {
extern cutrace::FuncInfo* const __start_cutrace_funcs[] __attribute__((weak, visibility("hidden")));
extern cutrace::FuncInfo* const __stop_cutrace_funcs[] __attribute__((weak, visibility("hidden")));
}

namespace cutrace {
namespace {

struct NameRef {
  FuncInfo* fi;
  int variant;  // 0 legacy export, 1 per-thread export, -1 base name
};

struct Registry {
  std::vector<FuncInfo*> funcs;
  std::unordered_map<std::string_view, std::vector<NameRef>> by_name;
  std::vector<void*> exports[2];  // libcuda's exported addresses per func, resolved lazily
  bool exports_resolved = false;
  std::mutex bind_mu;  // slow path only: binding a new slot
};

Registry* g_reg = nullptr;
std::once_flag g_reg_once;

void build_registry() {
  auto* r = new Registry();  // never freed: wrappers may run during exit
  for (FuncInfo* const* p = __start_cutrace_funcs; p && p < __stop_cutrace_funcs; ++p) {
    FuncInfo* fi = *p;
    uint16_t api = uint16_t(r->funcs.size());
    for (int s = 0; s < kSlots; ++s) fi->slots[s].api = api;
    r->funcs.push_back(fi);
    r->by_name[fi->base].push_back({fi, -1});
    if (fi->exp_legacy) r->by_name[fi->exp_legacy].push_back({fi, 0});
    if (fi->exp_pt) r->by_name[fi->exp_pt].push_back({fi, 1});
  }
  r->exports[0].assign(r->funcs.size(), nullptr);
  r->exports[1].assign(r->funcs.size(), nullptr);
  g_reg = r;
}

// Addresses libcuda exports for each traced function (to tell which variant a pointer is).
void resolve_exports(Registry& r) {
  if (r.exports_resolved) return;
  void* h = libcuda_handle();
  if (!h) return;
  for (size_t i = 0; i < r.funcs.size(); ++i) {
    if (r.funcs[i]->exp_legacy) r.exports[0][i] = real_dlsym(h, r.funcs[i]->exp_legacy);
    if (r.funcs[i]->exp_pt) r.exports[1][i] = real_dlsym(h, r.funcs[i]->exp_pt);
  }
  r.exports_resolved = true;
}

CUresult not_found_stub() { return CUDA_ERROR_NOT_FOUND; }

// Every driver function's ABI history, from cudaTypedefs.h (tools/dev/gen_abi_versions.py).
struct AbiHistory {
  const char* name;
  std::vector<int> legacy, per_thread;
};
const AbiHistory kAbi[] = {
#include "shim/abi_versions.inc"
};

const AbiHistory* abi_history(std::string_view name) {
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string_view, const AbiHistory*>();
    for (const AbiHistory& a : kAbi) (*m)[a.name] = &a;
    return m;
  }();
  auto it = index->find(name);
  return it == index->end() ? nullptr : it->second;
}

int newest_at_most(const std::vector<int>& versions, int v) {
  int best = 0;
  for (int x : versions)
    if (x <= v && x > best) best = x;
  return best;
}

}  // namespace

void ensure_registry() { std::call_once(g_reg_once, build_registry); }
size_t func_count() {
  ensure_registry();
  return g_reg->funcs.size();
}
FuncInfo& func_at(size_t api) {
  ensure_registry();
  return *g_reg->funcs[api];
}
const char* api_name(uint16_t api) { return api < func_count() ? g_reg->funcs[api]->base : "?"; }

void* Binding::resolve_plt() const {
  ensure_registry();
  if (config().deferred() && config().enabled) collector_ensure_started();
  void* p = plt_name ? real_dlsym(RTLD_NEXT, plt_name) : nullptr;
  if (!p) {
    log_warn("%s is not exported by the CUDA driver: the call fails with CUDA_ERROR_NOT_FOUND",
             plt_name ? plt_name : "?");
    p = reinterpret_cast<void*>(&not_found_stub);
  }
  const_cast<Binding*>(this)->real.store(p, std::memory_order_release);
  return p;
}

void* bind(FuncInfo& fi, void* real, bool per_thread) {
  if (!real || is_own_address(real)) return real;
  // Capture starts later (a window): the collector must run first to open it.
  if (config().deferred() && config().enabled) collector_ensure_started();
  for (int s = 0; s < kSlots; ++s) {
    Binding& b = fi.slots[s];
    if (b.real.load(std::memory_order_acquire) == real && b.per_thread == per_thread) return fi.entry(s);
  }
  std::lock_guard<std::mutex> lock(g_reg->bind_mu);
  for (int s = 2; s < kSlots; ++s) {
    Binding& b = fi.slots[s];
    void* cur = b.real.load(std::memory_order_acquire);
    if (cur == real && b.per_thread == per_thread) return fi.entry(s);
    if (cur) continue;
    b.per_thread = per_thread;
    b.real.store(real, std::memory_order_release);
    return fi.entry(s);
  }
  static bool warned = false;
  if (!warned) log_warn("too many distinct %s entry points: some calls are not traced", fi.base);
  warned = true;
  return real;
}

void* wrap_dlsym_result(const char* name, void* real) {
  if (!real || name[0] != 'c' || name[1] != 'u') return real;
  ensure_registry();
  auto it = g_reg->by_name.find(name);
  if (it == g_reg->by_name.end()) return real;
  for (const NameRef& ref : it->second)
    if (ref.variant >= 0) return bind(*ref.fi, real, ref.variant == 1);
  return real;
}

void* wrap_proc_address(const char* symbol, void* real, int cuda_version, unsigned long long flags) {
  if (!real || !symbol) return real;
  ensure_registry();
  auto it = g_reg->by_name.find(symbol);
  if (it == g_reg->by_name.end()) return real;
  {
    std::lock_guard<std::mutex> lock(g_reg->bind_mu);
    resolve_exports(*g_reg);
  }
  // 1. The pointer is one of libcuda's exports: we know its exact ABI and stream semantics.
  for (const NameRef& ref : it->second) {
    size_t api = ref.fi->slots[0].api;
    if (real == g_reg->exports[0][api]) return bind(*ref.fi, real, false);
    if (real == g_reg->exports[1][api]) return bind(*ref.fi, real, true);
  }
  // 2. Otherwise, from the ABI history: which ABI does (symbol, cudaVersion, flags) return?
  //    Wrap only when one of our wrappers implements exactly that ABI; else pass it through.
  const AbiHistory* abi = abi_history(symbol);
  if (!abi) return real;
  bool pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && !abi->per_thread.empty();
  int selected = newest_at_most(pt ? abi->per_thread : abi->legacy, cuda_version);
  int legacy_abi = newest_at_most(abi->legacy, selected);  // a per-thread variant has that signature
  for (const NameRef& ref : it->second)
    if (ref.variant == -1 && ref.fi->min_version == legacy_abi && legacy_abi)
      return bind(*ref.fi, real, pt && ref.fi->exp_pt);
  log_info("%s (cudaVersion %d) has an ABI cutrace does not wrap: passed through", symbol, cuda_version);
  return real;
}

}  // namespace cutrace

// ---- dlsym interposition -------------------------------------------------------------------
// dlsym(RTLD_NEXT, ...) must see its caller's return address, so the entry is a tail jump in
// assembly for that case; every other handle goes through ct_dlsym_impl, which wraps results
// that are traced CUDA driver entry points. Both symbol versions of glibc's dlsym are defined.
// The RTLD_NEXT path resolves glibc's dlsym itself when it is called before the shim's
// constructors (from a library loaded ahead of the shim: a sanitizer runtime looks up its
// interceptors' targets that way), so that RTLD_NEXT still means "after the caller".
// Not instrumented either, and it leaves for instrumented code only on a CUDA name ("cu..."):
// a sanitizer runtime ahead of the shim calls it before it is itself initialised.
extern "C" __attribute__((visibility("hidden"), used, no_sanitize("address", "thread", "undefined"))) void*
ct_dlsym_impl(void* handle, const char* name) {
  void* p = cutrace::real_dlsym(handle, name);
  if (!p || !name || name[0] != 'c' || name[1] != 'u') return p;
  return cutrace::wrap_dlsym_result(name, p);
}

#if defined(__x86_64__)
asm(".text\n"
    ".globl ct_dlsym_new\n.type ct_dlsym_new,@function\n"
    ".globl ct_dlsym_old\n.type ct_dlsym_old,@function\n"
    "ct_dlsym_new:\nct_dlsym_old:\n"
    "\tcmpq $-1, %rdi\n"
    "\tjne ct_dlsym_impl\n"
    "\tmovq ct_real_dlsym(%rip), %rax\n"
    "\ttestq %rax, %rax\n"
    "\tjne 1f\n"
    "\tpushq %rdi\n"
    "\tpushq %rsi\n"
    "\tsubq $8, %rsp\n"  // 16-byte aligned stack at the call
    "\tcall ct_resolve_real_dlsym\n"
    "\taddq $8, %rsp\n"
    "\tpopq %rsi\n"
    "\tpopq %rdi\n"
    "\ttestq %rax, %rax\n"
    "\tje ct_dlsym_impl\n"
    "1:\tjmp *%rax\n"
    ".size ct_dlsym_new,.-ct_dlsym_new\n.size ct_dlsym_old,.-ct_dlsym_old\n"
    ".symver ct_dlsym_new, dlsym@@GLIBC_2.34\n"
    ".symver ct_dlsym_old, dlsym@GLIBC_2.2.5\n");
#elif defined(__aarch64__)
asm(".text\n"
    ".globl ct_dlsym_new\n.type ct_dlsym_new,%function\n"
    ".globl ct_dlsym_old\n.type ct_dlsym_old,%function\n"
    "ct_dlsym_new:\nct_dlsym_old:\n"
    "\tcmn x0, #1\n"
    "\tb.ne ct_dlsym_impl\n"
    "\tadrp x16, ct_real_dlsym\n"
    "\tldr x16, [x16, :lo12:ct_real_dlsym]\n"
    "\tcbz x16, ct_dlsym_impl\n"
    "\tbr x16\n"
    ".symver ct_dlsym_new, dlsym@@GLIBC_2.34\n"
    ".symver ct_dlsym_old, dlsym@GLIBC_2.17\n");
#endif
