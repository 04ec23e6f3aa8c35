#include "collector/samplers.h"
#include <dlfcn.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <string>
#include "runtime/config.h"
#include "runtime/driver.h"

namespace cutrace {

// ---- CPU ------------------------------------------------------------------------------
namespace {
bool read_proc_stat(std::vector<std::pair<uint64_t, uint64_t>>* cores, std::pair<uint64_t, uint64_t>* all) {
  FILE* f = fopen("/proc/stat", "r");
  if (!f) return false;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "cpu", 3) != 0) break;
    unsigned long long v[10] = {};
    char name[32];
    int n = sscanf(line, "%31s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", name, &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    if (n < 5) continue;
    uint64_t total = 0;
    for (int i = 0; i < 8; ++i) total += v[i];  // guest time is already in user/nice
    uint64_t idle = v[3] + v[4];
    std::pair<uint64_t, uint64_t> busy_total{total - idle, total};
    if (strcmp(name, "cpu") == 0) *all = busy_total;
    else cores->push_back(busy_total);
  }
  fclose(f);
  return true;
}

uint64_t process_ticks() {
  FILE* f = fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');  // the command name may contain spaces
  if (!p) return 0;
  unsigned long long utime = 0, stime = 0;
  // Fields after ")": state(3) ... utime(14) stime(15).
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return 0;
  return utime + stime;
}

uint16_t pct100(uint64_t busy, uint64_t total) {
  return total ? uint16_t(busy * 10000 / total > 10000 ? 10000 : busy * 10000 / total) : 0;
}
}  // namespace

void CpuSampler::sample(TraceWriter& w, int64_t now_ns) {
  std::vector<std::pair<uint64_t, uint64_t>> cores;
  std::pair<uint64_t, uint64_t> all{0, 0};
  if (!read_proc_stat(&cores, &all)) return;
  uint64_t proc = process_ticks();
  bool first = prev_.empty();
  std::vector<uint16_t> util(cores.size(), 0);
  for (size_t i = 0; i < cores.size(); ++i) {
    if (!first && i < prev_.size()) util[i] = pct100(cores[i].first - prev_[i].busy, cores[i].second - prev_[i].total);
  }
  trace::CpuSampleRec r{};
  r.h.type = uint16_t(trace::RecType::CpuSample);
  r.ts = now_ns;
  r.ncores = uint16_t(cores.size());
  r.total_util = first ? 0 : pct100(all.first - prev_all_.busy, all.second - prev_all_.total);
  static const double ns_per_tick = 1e9 / double(sysconf(_SC_CLK_TCK));
  if (!first && now_ns > prev_ns_)
    r.process_util = uint32_t(double(proc - prev_proc_ticks_) * ns_per_tick * 10000.0 / double(now_ns - prev_ns_));
  prev_.resize(cores.size());
  for (size_t i = 0; i < cores.size(); ++i) prev_[i] = {cores[i].first, cores[i].second};
  prev_all_ = {all.first, all.second};
  prev_proc_ticks_ = proc;
  prev_ns_ = now_ns;
  if (!first) w.append_var(&r, sizeof r, util.data(), util.size() * sizeof(uint16_t));
}

// ---- NVML -----------------------------------------------------------------------------
struct GpuSampler::Nvml {
  struct Util {
    unsigned gpu, memory;
  };
  struct Mem {
    unsigned long long total, free, used;
  };
  int (*init)();
  int (*by_uuid)(const char*, void**);
  int (*util)(void*, Util*);
  int (*mem)(void*, Mem*);
  int (*clock)(void*, int, unsigned*);
  int (*power)(void*, unsigned*);
  int (*temp)(void*, int, unsigned*);
};

template <class F>
static bool sym(void* h, F& f, const char* name) {
  f = reinterpret_cast<F>(real_dlsym(h, name));
  return f != nullptr;
}

void GpuSampler::init(const std::vector<std::vector<uint8_t>>& uuids) {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  auto* n = new Nvml();
  bool ok = h && sym(h, n->init, "nvmlInit_v2") && sym(h, n->by_uuid, "nvmlDeviceGetHandleByUUID") &&
            sym(h, n->util, "nvmlDeviceGetUtilizationRates") && sym(h, n->mem, "nvmlDeviceGetMemoryInfo") &&
            sym(h, n->clock, "nvmlDeviceGetClockInfo") && sym(h, n->power, "nvmlDeviceGetPowerUsage") &&
            sym(h, n->temp, "nvmlDeviceGetTemperature") && n->init() == 0;
  if (!ok) {
    log_warn("NVML (libnvidia-ml.so.1) not available: no GPU utilisation samples");
    delete n;
    return;
  }
  nvml_ = n;
  for (const auto& u : uuids) {
    char s[64];
    snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    void* dev = nullptr;
    handles_.push_back(n->by_uuid(s, &dev) == 0 ? dev : nullptr);
  }
}

void GpuSampler::sample(TraceWriter& w, int64_t now_ns) {
  if (!nvml_) return;
  for (size_t i = 0; i < handles_.size(); ++i) {
    void* dev = handles_[i];
    if (!dev) continue;
    trace::GpuSampleRec r{};
    r.ts = now_ns;
    r.device = uint16_t(i);
    Nvml::Util u{};
    if (nvml_->util(dev, &u) == 0) r.util = uint16_t(u.gpu), r.mem_util = uint16_t(u.memory);
    Nvml::Mem m{};
    if (nvml_->mem(dev, &m) == 0) r.mem_used = m.used, r.mem_total = m.total;
    unsigned v = 0;
    if (nvml_->clock(dev, /*NVML_CLOCK_SM*/ 1, &v) == 0) r.sm_clock_mhz = v;
    if (nvml_->power(dev, &v) == 0) r.power_mw = v;
    if (nvml_->temp(dev, /*NVML_TEMPERATURE_GPU*/ 0, &v) == 0) r.temp_c = uint16_t(v);
    w.add(r, trace::RecType::GpuSample);
  }
}

}  // namespace cutrace
