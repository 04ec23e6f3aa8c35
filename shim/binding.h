// How wrappers are reached. Every traced driver function F has kSlots entry points that differ
// only in which Binding they pass to F's implementation; a Binding holds the real function the
// entry forwards to. Slot 0/1 serve the shim's exported symbols (legacy / per-thread variants,
// resolved with dlsym(RTLD_NEXT) on first call); the others are bound at run time to whatever
// real pointer dlsym or cuGetProcAddress handed out, so a wrapper always calls exactly the
// function the application would have called.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include "runtime/api_names.h"

namespace cutrace {

inline constexpr int kSlots = 8;

struct Binding {
  std::atomic<void*> real{nullptr};
  const char* plt_name = nullptr;  // exported name for slots 0/1
  uint16_t api = 0;
  bool per_thread = false;

  constexpr Binding() = default;
  constexpr Binding(const char* name, bool pt) : plt_name(name), per_thread(pt) {}

  template <class F>
  F fn() const {
    void* p = real.load(std::memory_order_relaxed);
    if (__builtin_expect(p == nullptr, 0)) p = resolve_plt();
    return reinterpret_cast<F>(p);
  }
  void* resolve_plt() const;
};

struct FuncInfo {
  const char* base;        // the name cuGetProcAddress is asked for ("cuMemcpyHtoD")
  const char* exp_legacy;  // libcuda's exported symbol ("cuMemcpyHtoD_v2"), or nullptr
  const char* exp_pt;      // its per-thread-stream variant ("cuMemcpyHtoD_v2_ptds"), or nullptr
  int min_version;         // cudaVersion from which this ABI is the one cuGetProcAddress returns
  Binding* slots;          // kSlots bindings
  void* (*entry)(int slot);
};

extern std::atomic<bool> g_capture_on;  // runtime/config.h

// Implementations that do nothing outside capture windows but call the real function (those
// made of traced_gpu_op or traced_call alone, shim/op.h: launches, copies, memsets, syncs, event
// records and queries, stream waits, allocations and frees; not graph captures, which count the
// captures in progress, nor the control calls, which act outside windows too): their entry
// points test the window themselves and go straight on, a tail call with the caller's arguments
// in place (CUTRACE_DIRECT_WHEN_OFF(impl), next to the implementation): the cheapest way through
// outside windows (bench/gpu/launch_ab.py, `off-direct`; BENCHMARKS.md).
template <auto Impl>
inline constexpr bool kDirectWhenOff = false;
#define CUTRACE_DIRECT_WHEN_OFF(IMPL) \
  template <>                         \
  inline constexpr bool kDirectWhenOff<&IMPL> = true;

// Entry points: Entries<PFN>::fn<Impl, Table, N> has exactly PFN's signature.
template <class Sig>
struct Entries;
template <class R, class... A>
struct Entries<R (*)(A...)> {
  template <R (*Impl)(const Binding&, A...), Binding* Tab, int N>
  static R fn(A... a) {
    if constexpr (kDirectWhenOff<Impl>) {
      void* real = Tab[N].real.load(std::memory_order_relaxed);
      if (!g_capture_on.load(std::memory_order_relaxed) && __builtin_expect(real != nullptr, 1))
        return reinterpret_cast<R (*)(A...)>(real)(a...);
    }
    return Impl(Tab[N], a...);
  }
  template <R (*Impl)(const Binding&, A...), Binding* Tab>
  static void* entry(int slot) {
    static constexpr R (*table[kSlots])(A...) = {&fn<Impl, Tab, 0>, &fn<Impl, Tab, 1>, &fn<Impl, Tab, 2>,
                                                 &fn<Impl, Tab, 3>, &fn<Impl, Tab, 4>, &fn<Impl, Tab, 5>,
                                                 &fn<Impl, Tab, 6>, &fn<Impl, Tab, 7>};
    return reinterpret_cast<void*>(table[slot]);
  }
};

// Registry (built lazily from the cutrace_funcs section).
FuncInfo& func_at(size_t api);  // func_count(), api_name(): runtime/api_names.h
void ensure_registry();

// Returns our entry point forwarding to `real` (or `real` itself if it cannot be wrapped).
void* bind(FuncInfo& fi, void* real, bool per_thread);
// Wraps the result of dlsym(handle, name) when `name` is a traced export of libcuda.
void* wrap_dlsym_result(const char* name, void* real);
// Wraps the result of cuGetProcAddress(symbol, ..., cudaVersion, flags).
void* wrap_proc_address(const char* symbol, void* real, int cuda_version, unsigned long long flags);

}  // namespace cutrace

// Declares traced function VAR (implementation IMPL, signature PFN): its bindings, its
// FuncInfo, its registration in the cutrace_funcs section, and the shim's exported symbol(s)
// EXP (and EXP_PT, the per-thread-default-stream variant) that jump to slot 0 (1).
#define CUTRACE_FUNC_IMPL(VAR, PFN, IMPL, BASE, MINVER, EXP_S, EXP_PT_S)                               \
  namespace {                                                                                          \
  ::cutrace::Binding VAR##_slots[::cutrace::kSlots] = {::cutrace::Binding(EXP_S, false),               \
                                                       ::cutrace::Binding(EXP_PT_S, true)};            \
  ::cutrace::FuncInfo VAR = {BASE,   EXP_S,       EXP_PT_S,                                            \
                             MINVER, VAR##_slots, &::cutrace::Entries<PFN>::entry<IMPL, VAR##_slots>}; \
  __attribute__((section("cutrace_funcs"), used)) ::cutrace::FuncInfo* const VAR##_reg = &VAR;         \
  }

#if defined(__x86_64__)
#define CUTRACE_JUMP_ASM(NAME)                                                                                  \
  ".text\n.globl " #NAME "\n.type " #NAME ",@function\n" #NAME ":\n\tjmp *ct_plt_" #NAME "(%rip)\n.size " #NAME \
  ",.-" #NAME "\n"
#elif defined(__aarch64__)
#define CUTRACE_JUMP_ASM(NAME)                                                                \
  ".text\n.globl " #NAME "\n.type " #NAME ",%function\n" #NAME ":\n\tadrp x16, ct_plt_" #NAME \
  "\n\tldr x16, [x16, :lo12:ct_plt_" #NAME "]\n\tbr x16\n.size " #NAME ",.-" #NAME "\n"
#else
#error "cutrace's shim supports x86-64 and aarch64"
#endif

#define CUTRACE_EXPORT(NAME, PFN, IMPL, VAR, SLOT)                                 \
  extern "C" __attribute__((visibility("hidden"), used)) const PFN ct_plt_##NAME = \
      &::cutrace::Entries<PFN>::fn<IMPL, VAR##_slots, SLOT>;                       \
  asm(CUTRACE_JUMP_ASM(NAME));

#define CUTRACE_FUNC(VAR, PFN, IMPL, BASE, MINVER, EXP)          \
  CUTRACE_FUNC_IMPL(VAR, PFN, IMPL, BASE, MINVER, #EXP, nullptr) \
  CUTRACE_EXPORT(EXP, PFN, IMPL, VAR, 0)

#define CUTRACE_FUNC_PT(VAR, PFN, IMPL, BASE, MINVER, EXP, EXP_PT) \
  CUTRACE_FUNC_IMPL(VAR, PFN, IMPL, BASE, MINVER, #EXP, #EXP_PT)   \
  CUTRACE_EXPORT(EXP, PFN, IMPL, VAR, 0)                           \
  CUTRACE_EXPORT(EXP_PT, PFN, IMPL, VAR, 1)
