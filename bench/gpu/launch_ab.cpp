// What recording adds to each kernel launch, measured inside one process on the real driver: a C++
// loop of cuLaunchKernel calls of an empty kernel (JIT-compiled from PTX), in blocks of BLOCK
// launches spread over STREAMS streams so that the GPU keeps up and the loop measures the CPU
// side of a launch. A process runs PRE blocks first (before any capture window), then CYCLES
// pairs of blocks, alternately inside and outside a window: `pre`, `on` and `off` blocks. Every
// block starts the same way, untimed: the GPU synchronised, the window edge if any, then 20 ms of
// spinning (cutrace's collector switches CUPTI's collection off 5 ms after a window closes; a
// spin, not a sleep: a block after the CPU idled runs slower).
// With --gpu, each block then also times the GPU side: BLOCK/4 launches of the same kernel queued
// behind a stream wait, released at once, timed with two events (GPU ns per kernel, back to back).
// One JSON line per block: phase, wall-clock and thread-CPU ns per launch (and gpu_ns).
//
//   launch_ab [--windows api|raw-cupti|none|direct] [--pre 20] [--cycles 60] [--block 2000]
//             [--streams 4] [--cupti-attrs cb,ts,kinds,pinned,shared,...] [--gpu]
//             [--tail N] [--tail-gap-ms MS]
//
// --tail N: after the cycles, N more unrecorded blocks (`tail`), each after MS ms of spinning
//   (default 1000): whether what a window leaves on each launch wears off with time.
//
// --windows api: windows through cutrace's C API (cutrace_capture_start/stop, found with dlsym
//   when the shim is preloaded with --capture-range manual; without the shim the edges do
//   nothing, and the on/off ratio of such a run is the method's own bias).
// --windows raw-cupti: no cutrace; CUPTI's kernel activity on in `on` blocks (libcupti loaded
//   here, records counted and discarded): CUPTI's own cost per launch. --cupti-attrs adds what
//   cutrace's use of CUPTI adds (cb: a driver callback on every launch; ts: a timestamp
//   callback; kinds: copies' and memsets' activity too) or other settings (raw_cupti_init).
// --windows none: no window ever (a preloaded shim that never records).
// --windows direct: no window; `on` blocks call cuLaunchKernel through the symbol this program
//   links (the shim's, when preloaded), `off` blocks call the driver's own function (from the
//   driver library with glibc's dlsym, which the shim does not see): what a preloaded shim that
//   is not recording costs per launch, inside one process.
// Built by `make build/bench/launch_ab` (with `make test`): the CUDA headers, linked against the fake
// driver (same soname as the real one, libcuda.so.1) and libdl; the binary runs on a GPU machine.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char kPtx[] = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry noop() { ret; }
)";

#define CHECK(x)                                                                 \
  do {                                                                           \
    CUresult r_ = (x);                                                           \
    if (r_ != CUDA_SUCCESS) {                                                    \
      fprintf(stderr, "launch_ab: %s failed: %d (line %d)\n", #x, r_, __LINE__); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

int64_t ns(clockid_t c) {
  timespec t;
  clock_gettime(c, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// CUPTI driven directly (raw-cupti*): the activity kind on and off per window, records discarded.
struct RawCupti {
  CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*enable)(CUpti_ActivityKind);
  CUptiResult (*disable)(CUpti_ActivityKind);
  CUptiResult (*flush)(uint32_t);
  CUptiResult (*next)(uint8_t*, size_t, CUpti_Activity**);
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*);
  CUptiResult (*enable_cb)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*set_attr)(CUpti_ActivityAttribute, size_t*, void*);
  CUptiResult (*reg_ts)(CUpti_TimestampCallbackFunc);
  CUptiResult (*finalize)();
  CUptiResult (*enable_ctx)(CUcontext, CUpti_ActivityKind);
  CUptiResult (*disable_ctx)(CUcontext, CUpti_ActivityKind);
  bool kinds = false, finalize_each = false, per_ctx = false, fresh_fn = false, fresh_stream = false;
  std::string attrs;
};
RawCupti g_cupti;
uint64_t g_records = 0;
bool g_records_setup_needed = false;  // finalize: registrations to make again
__thread uint32_t t_corr = 0;

void CUPTIAPI requested(uint8_t** b, size_t* size, size_t* max) {
  *b = static_cast<uint8_t*>(aligned_alloc(8, 2 << 20));
  *size = 2 << 20, *max = 0;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (g_cupti.next(b, valid, &r) == CUPTI_SUCCESS) ++g_records;
  free(b);
}
void CUPTIAPI on_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* d) {
  auto* info = static_cast<const CUpti_CallbackData*>(d);
  if (info->callbackSite == CUPTI_API_ENTER) t_corr = info->correlationId;
}

template <class F>
void sym(void* h, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(h, name));
  if (!f) fprintf(stderr, "launch_ab: %s not found in libcupti\n", name), exit(1);
}

// `attrs`: "cb", "ts", "kinds" (see the top), "finalize" (CUPTI detached with cuptiFinalize at
// each window's end, here on the only thread that makes CUDA calls, and set up again at the next
// window's start), "pinned" (CUPTI's profiling buffers in pinned host
// memory instead of device memory), "shared" (one activity buffer for all threads instead of one
// per thread; set before anything else, as CUPTI asks), "ctx" (the kinds switched for the context
// with cuptiActivityEnableContext/DisableContext instead of for the process), "freshfn" and
// "freshstream" (the blocks outside windows, `pre` included, launch another kernel function, from
// another module, or on other streams, than those inside: whether what a window leaves behind
// belongs to the functions or streams it saw).
uint64_t CUPTIAPI timestamp() { return uint64_t(ns(CLOCK_MONOTONIC)); }

// The registrations (again after each cuptiFinalize, which drops them).
void raw_cupti_register() {
  RawCupti& c = g_cupti;
  if (c.attrs.find("ts") != std::string::npos) c.reg_ts(timestamp);
  c.reg(requested, completed);
  if (c.attrs.find("cb") != std::string::npos) {
    CUpti_SubscriberHandle s;
    c.subscribe(&s, on_call, nullptr);
    c.enable_cb(1, s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  }
}

void raw_cupti_init(const std::string& attrs) {
  // The places cutrace looks (collector/cupti_source.cpp).
  void* h = nullptr;
  const char* env = getenv("CUTRACE_CUPTI");
  for (const char* p : {env ? env : "", "libcupti.so.13", "libcupti.so.12", "libcupti.so",
                        "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"})
    if (*p && (h = dlopen(p, RTLD_NOW))) break;
  if (!h) fprintf(stderr, "launch_ab: libcupti not found (set CUTRACE_CUPTI)\n"), exit(1);
  RawCupti& c = g_cupti;
  sym(h, c.reg, "cuptiActivityRegisterCallbacks"), sym(h, c.enable, "cuptiActivityEnable");
  sym(h, c.disable, "cuptiActivityDisable"), sym(h, c.flush, "cuptiActivityFlushAll");
  sym(h, c.next, "cuptiActivityGetNextRecord"), sym(h, c.subscribe, "cuptiSubscribe");
  sym(h, c.enable_cb, "cuptiEnableCallback"), sym(h, c.set_attr, "cuptiActivitySetAttribute");
  sym(h, c.reg_ts, "cuptiActivityRegisterTimestampCallback"), sym(h, c.finalize, "cuptiFinalize");
  sym(h, c.enable_ctx, "cuptiActivityEnableContext"), sym(h, c.disable_ctx, "cuptiActivityDisableContext");
  auto has = [&](const char* a) { return attrs.find(a) != std::string::npos; };
  uint8_t one = 1, zero = 0;
  size_t sz = 1;
  if (has("pinned") && c.set_attr(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &sz, &one) != CUPTI_SUCCESS)
    fprintf(stderr, "launch_ab: CUPTI refused pinned buffers\n"), exit(1);
  if (has("shared") && c.set_attr(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &sz, &zero) != CUPTI_SUCCESS)
    fprintf(stderr, "launch_ab: CUPTI refused a shared activity buffer\n"), exit(1);
  c.kinds = has("kinds");
  c.finalize_each = has("finalize");
  c.per_ctx = has("ctx");
  c.fresh_fn = has("freshfn");
  c.fresh_stream = has("freshstream");
  c.attrs = attrs;
  raw_cupti_register();
}

}  // namespace

int main(int argc, char** argv) {
  std::string windows = "api", attrs;
  int pre = 20, cycles = 60, block = 2000, nstreams = 4, tail = 0, tail_gap_ms = 1000;
  bool gpu = false;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 == argc && strcmp(argv[i], "--gpu") != 0)
      fprintf(stderr, "launch_ab: %s needs a value\n", argv[i]), exit(2);
    std::string a = argv[i];
    if (a == "--windows") windows = argv[i + 1];
    else if (a == "--pre") pre = atoi(argv[i + 1]);
    else if (a == "--cycles") cycles = atoi(argv[i + 1]);
    else if (a == "--block") block = atoi(argv[i + 1]);
    else if (a == "--streams") nstreams = atoi(argv[i + 1]);
    else if (a == "--cupti-attrs") attrs = argv[i + 1];
    else if (a == "--tail") tail = atoi(argv[i + 1]);
    else if (a == "--tail-gap-ms") tail_gap_ms = atoi(argv[i + 1]);
    else if (a == "--gpu") gpu = true, --i;
    else fprintf(stderr, "launch_ab: unknown option %s\n", argv[i]), exit(2);
  }
  void (*win_start)() = nullptr, (*win_stop)() = nullptr;
  const bool raw = windows == "raw-cupti", direct = windows == "direct";
  if (windows == "api") {
    win_start = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cutrace_capture_start"));
    win_stop = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cutrace_capture_stop"));
  } else if (!raw && !direct && windows != "none") {
    fprintf(stderr, "launch_ab: --windows must be api, raw-cupti, none or direct\n");
    return 2;
  }
  CHECK(cuInit(0));
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  if (raw) raw_cupti_init(attrs);
  // The empty kernel, from a module of its own each time. The fake driver (local runs of this
  // harness) takes its own module text instead of PTX.
  auto load_noop = [] {
    CUmodule mod;
    CUfunction fn;
    if (cuModuleLoadData(&mod, kPtx) != CUDA_SUCCESS) CHECK(cuModuleLoadData(&mod, "kernel noop 1\n"));
    CHECK(cuModuleGetFunction(&fn, mod, "noop"));
    return fn;
  };
  auto new_streams = [&] {
    std::vector<CUstream> ss(nstreams);
    for (CUstream& s : ss) CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    return ss;
  };
  CUfunction f = load_noop();
  std::vector<CUstream> streams = new_streams();
  // What the blocks outside windows launch (freshfn, freshstream: not what the windows saw).
  CUfunction f_out = g_cupti.fresh_fn ? load_noop() : f;  // raw-cupti only (raw_cupti_init)
  std::vector<CUstream> streams_out = g_cupti.fresh_stream ? new_streams() : streams;

  // The driver's own cuLaunchKernel (--windows direct): glibc's dlsym, looked up in libc itself
  // (the shim exports a dlsym of its own that wraps what libcuda hands out).
  using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void**, void**);
  Launch linked = &cuLaunchKernel, real = linked;
  if (direct) {
    void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    auto libc_dlsym =
        reinterpret_cast<void* (*)(void*, const char*)>(libc ? dlvsym(libc, "dlsym", "GLIBC_2.34") : nullptr);
    if (!libc_dlsym && libc)
      libc_dlsym = reinterpret_cast<void* (*)(void*, const char*)>(dlvsym(libc, "dlsym", "GLIBC_2.2.5"));
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    real = libc_dlsym && cuda ? reinterpret_cast<Launch>(libc_dlsym(cuda, "cuLaunchKernel")) : nullptr;
    if (!real) fprintf(stderr, "launch_ab: the driver's cuLaunchKernel not found\n"), exit(1);
  }
  // --gpu: a stream wait on a host word holds the queued kernels until all are in.
  CUstream gs = streams[0];
  CUevent e0 = nullptr, e1 = nullptr;
  volatile uint32_t* flag = nullptr;
  CUdeviceptr dflag = 0;
  using WaitValue = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  WaitValue wait_value = nullptr;  // looked up, not linked: the fake driver has none
  if (gpu) {
    CUdriverProcAddressQueryResult q;
    CHECK(cuGetProcAddress("cuStreamWaitValue32", reinterpret_cast<void**>(&wait_value), 12000, 0, &q));
    if (!wait_value) fprintf(stderr, "launch_ab: no cuStreamWaitValue32\n"), exit(1);
    CHECK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    CHECK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    void* host = nullptr;
    CHECK(cuMemHostAlloc(&host, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    flag = static_cast<volatile uint32_t*>(host);
    CHECK(cuMemHostGetDevicePointer(&dflag, host, 0));
  }
  auto spin = [](int64_t dur) {
    for (int64_t end = ns(CLOCK_MONOTONIC) + dur; ns(CLOCK_MONOTONIC) < end;) {}
  };
  // Untimed start of every block: idle GPU, the edge (open: true, close: false, none: -1), spin.
  auto prepare = [&](int edge, int64_t spin_ns = 20000000) {
    CHECK(cuCtxSynchronize());
    if (edge >= 0 && raw) {
      if (edge == 1 && g_cupti.finalize_each && g_records_setup_needed) raw_cupti_register();
      for (CUpti_ActivityKind k :
           {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
        if (k != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !g_cupti.kinds) continue;
        if (g_cupti.per_ctx) edge ? g_cupti.enable_ctx(ctx, k) : g_cupti.disable_ctx(ctx, k);
        else edge ? g_cupti.enable(k) : g_cupti.disable(k);
      }
      if (!edge) g_cupti.flush(g_cupti.finalize_each ? 1 : 0);
      if (!edge && g_cupti.finalize_each) g_cupti.finalize(), g_records_setup_needed = true;
    } else if (edge == 1 && win_start) {
      win_start();
    } else if (edge == 0 && win_stop) {
      win_stop();
    }
    spin(spin_ns);
  };
  auto run_block = [&](const char* phase, int index, Launch launch) {
    const bool inside = strcmp(phase, "on") == 0;
    CUfunction fn = inside ? f : f_out;
    const std::vector<CUstream>& ss = inside ? streams : streams_out;
    int64_t w0 = ns(CLOCK_MONOTONIC), c0 = ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < block; ++i) CHECK(launch(fn, 1, 1, 1, 32, 1, 1, 0, ss[i % nstreams], nullptr, nullptr));
    int64_t w1 = ns(CLOCK_MONOTONIC), c1 = ns(CLOCK_THREAD_CPUTIME_ID);
    float gpu_ms = 0;
    const int burst = block / 4;
    if (gpu) {
      CHECK(cuCtxSynchronize());
      *flag = 0;
      CHECK(wait_value(gs, dflag, 1, CU_STREAM_WAIT_VALUE_EQ));
      CHECK(cuEventRecord(e0, gs));
      for (int i = 0; i < burst; ++i) CHECK(launch(f, 1, 1, 1, 32, 1, 1, 0, gs, nullptr, nullptr));
      CHECK(cuEventRecord(e1, gs));
      *flag = 1;
      CHECK(cuStreamSynchronize(gs));
      CHECK(cuEventElapsedTime(&gpu_ms, e0, e1));
    }
    printf("{\"i\": %d, \"phase\": \"%s\", \"ns\": %.2f, \"cpu_ns\": %.2f", index, phase, double(w1 - w0) / block,
           double(c1 - c0) / block);
    if (gpu) printf(", \"gpu_ns\": %.2f", double(gpu_ms) * 1e6 / burst);
    printf("}\n");
  };
  prepare(-1);
  run_block("warmup", -1, linked);  // module load, stream creation and first-launch costs
  int k = 0;
  for (int i = 0; i < pre; ++i) prepare(-1), run_block("pre", k++, linked);
  for (int c = 0; c < cycles; ++c) {
    prepare(direct ? -1 : 1);
    run_block("on", k++, linked);
    prepare(direct ? -1 : 0);
    run_block("off", k++, direct ? real : linked);
  }
  for (int i = 0; i < tail; ++i) prepare(-1, int64_t(tail_gap_ms) * 1000000), run_block("tail", k++, linked);
  CHECK(cuCtxSynchronize());
  if (raw)
    g_cupti.flush(1), fprintf(stderr, "launch_ab: CUPTI delivered %llu records\n", (unsigned long long)g_records);
  return 0;
}
