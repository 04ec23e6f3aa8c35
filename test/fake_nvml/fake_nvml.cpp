// A fake libnvidia-ml.so.1 for the e2e tests: the NVML calls the collector's GPU sampler makes
// (collector/samplers.cpp), answering with a deterministic ramp per call so that the report's
// utilisation, memory, SM clock, power and temperature tracks have known values:
// call k (k = 0, 1, ...) of each query: util 40 + k % 50 %, SM clock 1400 + 10 k MHz,
// power 200 + k W, temperature 50 + k % 30 C, memory used (k + 1) GiB of 80 GiB.
// Only on LD_LIBRARY_PATH for the tests that ask for it (build/test/fake_nvml).
#include <atomic>
#include <cstring>

namespace {
std::atomic<unsigned> g_calls[5];  // util, mem, clock, power, temp
unsigned next(int q) { return g_calls[q].fetch_add(1, std::memory_order_relaxed); }
int g_device;  // the one handle every UUID maps to
}  // namespace

extern "C" {
struct FakeNvmlUtil {
  unsigned gpu, memory;
};
struct FakeNvmlMem {
  unsigned long long total, free, used;
};

int nvmlInit_v2() { return 0; }
int nvmlDeviceGetHandleByUUID(const char* uuid, void** dev) {
  if (!uuid || std::strncmp(uuid, "GPU-", 4) != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *dev = &g_device;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void*, FakeNvmlUtil* u) {
  unsigned k = next(0);
  u->gpu = 40 + k % 50, u->memory = 10;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void*, FakeNvmlMem* m) {
  unsigned long long k = next(1);
  m->total = 80ull << 30, m->used = (k + 1) << 30, m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetClockInfo(void*, int, unsigned* v) {
  *v = 1400 + 10 * next(2);
  return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* mw) {
  *mw = (200 + next(3)) * 1000;
  return 0;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* c) {
  *c = 50 + next(4) % 30;
  return 0;
}
}
