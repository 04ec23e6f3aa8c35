#include "collector/cpu_counters.h"
#include <dirent.h>
#include <linux/perf_event.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include "runtime/config.h"

namespace cutrace {

namespace {
constexpr const char* kSysfs = "/sys/bus/event_source/devices";
constexpr int kMaxCpus = 256;  // more CPUs: per-CPU counters are not opened (fds, sample size)

// getrusage(RUSAGE_SELF) stands in for a software counter perf_event_open refuses.
enum Fallback : uint8_t { kNoFallback = 0, kRusageCpuTime = 1, kRusageSwitches = 2, kRusageFaults = 3 };

struct Named {
  const char* name;
  uint32_t type;
  uint64_t config;
};
constexpr uint64_t cache_miss(uint64_t cache) {
  return cache | (PERF_COUNT_HW_CACHE_OP_READ << 8) | (PERF_COUNT_HW_CACHE_RESULT_MISS << 16);
}
const Named kGeneric[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"itlb-misses", PERF_TYPE_HW_CACHE, cache_miss(PERF_COUNT_HW_CACHE_ITLB)},
    {"itlb-load-misses", PERF_TYPE_HW_CACHE, cache_miss(PERF_COUNT_HW_CACHE_ITLB)},
    {"dtlb-misses", PERF_TYPE_HW_CACHE, cache_miss(PERF_COUNT_HW_CACHE_DTLB)},
    {"dtlb-load-misses", PERF_TYPE_HW_CACHE, cache_miss(PERF_COUNT_HW_CACHE_DTLB)},
    {"l1-dcache-load-misses", PERF_TYPE_HW_CACHE, cache_miss(PERF_COUNT_HW_CACHE_L1D)},
    {"llc-load-misses", PERF_TYPE_HW_CACHE, cache_miss(PERF_COUNT_HW_CACHE_LL)},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
};

std::string lower(std::string s) {
  for (char& c : s) c = char(tolower(static_cast<unsigned char>(c)));
  return s;
}

bool read_text(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  return true;
}

// Deposits `value` into the bit ranges of one format file ("config:0-7,21" or "config1:3").
bool deposit(const std::string& format, uint64_t value, CounterSpec* s) {
  size_t colon = format.find(':');
  if (colon == std::string::npos) return false;
  std::string field = format.substr(0, colon);
  uint64_t* word = field == "config"    ? &s->config
                   : field == "config1" ? &s->config1
                   : field == "config2" ? &s->config2
                                        : nullptr;
  if (!word) return false;
  std::stringstream ranges(format.substr(colon + 1));
  std::string r;
  while (std::getline(ranges, r, ',')) {
    int lo = 0, hi = 0;
    if (sscanf(r.c_str(), "%d-%d", &lo, &hi) == 1) hi = lo;
    if (lo < 0 || hi > 63 || hi < lo) return false;
    for (int b = lo; b <= hi; ++b, value >>= 1)
      if (value & 1) *word |= 1ull << b;
  }
  return value == 0;  // bits left over: the value does not fit the field
}

bool resolve_sysfs(const std::string& pmu, const std::string& event, const std::string& sysfs, CounterSpec* s,
                   std::string* why) {
  std::string dir = sysfs + "/" + pmu, terms, type;
  if (!read_text(dir + "/events/" + event, &terms) || !read_text(dir + "/type", &type)) return false;
  s->type = uint32_t(strtoul(type.c_str(), nullptr, 10));
  std::stringstream ss(terms);
  std::string term;
  while (std::getline(ss, term, ',')) {
    size_t eq = term.find('=');
    std::string key = term.substr(0, eq), format;
    uint64_t value = eq == std::string::npos ? 1 : strtoull(term.c_str() + eq + 1, nullptr, 0);
    if (!read_text(dir + "/format/" + key, &format) || !deposit(format, value, s)) {
      *why = "the term '" + term + "' of " + dir + "/events/" + event + " has no format this reader knows";
      return false;
    }
  }
  s->per_cpu = true;
  return true;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int paranoid() {
  std::string v;
  return read_text("/proc/sys/kernel/perf_event_paranoid", &v) ? atoi(v.c_str()) : 99;
}

bool has_cpu_pmu() {
  for (const std::string& d : list_dir(kSysfs))
    if (d == "cpu" || d.rfind("cpu_", 0) == 0 || d.rfind("armv", 0) == 0 || d.rfind("arm_", 0) == 0) return true;
  return false;
}

std::string refusal(int err, bool hardware, bool per_cpu) {
  char buf[256];
  switch (err) {
    case EACCES:
    case EPERM:
      snprintf(buf, sizeof buf,
               "perf_event_open refused (%s): perf_event_paranoid is %d%s and the process lacks CAP_PERFMON",
               err == EACCES ? "EACCES" : "EPERM", paranoid(), per_cpu ? " (per-CPU counting needs <= 0)" : "");
      return buf;
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
    case EINVAL:
      if (hardware && !has_cpu_pmu())
        return std::string("no hardware PMU: the kernel lists no CPU PMU under ") + kSysfs +
               " (a VM without PMU passthrough)";
      snprintf(buf, sizeof buf, "the kernel cannot count it here (%s)", strerror(err));
      return buf;
    case ENOSYS: return "the kernel has no perf_event_open";
    case EMFILE:
    case ENFILE: return "out of file descriptors";
    default: snprintf(buf, sizeof buf, "perf_event_open failed: %s", strerror(err)); return buf;
  }
}

int perf_open(const CounterSpec& s, pid_t pid, int cpu, bool user_only) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = s.type;
  a.config = s.config;
  a.config1 = s.config1;
  a.config2 = s.config2;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  a.inherit = pid > 0 ? 1 : 0;
  a.exclude_kernel = user_only ? 1 : 0;
  a.exclude_hv = 1;
  return int(syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

std::vector<pid_t> own_threads() {
  std::vector<pid_t> out;
  for (const std::string& t : list_dir("/proc/self/task")) out.push_back(pid_t(atoi(t.c_str())));
  if (out.empty()) out.push_back(pid_t(syscall(SYS_gettid)));
  return out;
}

CounterReading rusage_reading(uint8_t fallback) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  CounterReading r;
  if (fallback == kRusageCpuTime)
    r.value = uint64_t(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000000ull +
              uint64_t(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000ull;
  else if (fallback == kRusageSwitches) r.value = uint64_t(u.ru_nvcsw + u.ru_nivcsw);
  else r.value = uint64_t(u.ru_minflt + u.ru_majflt);
  return r;
}

uint8_t fallback_of(const CounterSpec& s) {
  if (s.type != PERF_TYPE_SOFTWARE) return kNoFallback;
  switch (s.config) {
    case PERF_COUNT_SW_TASK_CLOCK:
    case PERF_COUNT_SW_CPU_CLOCK: return kRusageCpuTime;
    case PERF_COUNT_SW_CONTEXT_SWITCHES: return kRusageSwitches;
    case PERF_COUNT_SW_PAGE_FAULTS: return kRusageFaults;
    default: return kNoFallback;
  }
}

// Counted in the kernel: a user-mode-only counter of these reads 0.
bool kernel_only(const CounterSpec& s) {
  return s.type == PERF_TYPE_SOFTWARE &&
         (s.config == PERF_COUNT_SW_CONTEXT_SWITCHES || s.config == PERF_COUNT_SW_CPU_MIGRATIONS);
}
}  // namespace

const std::vector<std::string>& software_counter_names() {
  // Never destroyed: the collector thread may read it while exit runs the static destructors.
  static const auto* v =
      new std::vector<std::string>{"task-clock", "context-switches", "cpu-migrations", "page-faults"};
  return *v;
}

const std::vector<std::string>& default_hardware_counter_names() {
  static const auto* v = new std::vector<std::string>{"cycles",      "instructions", "cache-misses", "branch-misses",
                                                      "itlb-misses", "dtlb-misses"};  // never destroyed
  return *v;
}

bool resolve_counter(const std::string& name, const std::string& sysfs, CounterSpec* out, std::string* why) {
  CounterSpec s;
  s.name = name;
  std::string key = lower(name);
  for (const Named& n : kGeneric)
    if (key == n.name) {
      s.type = n.type, s.config = n.config;
      s.software = n.type == PERF_TYPE_SOFTWARE;
      s.per_cpu = !s.software || n.config == PERF_COUNT_SW_CONTEXT_SWITCHES || n.config == PERF_COUNT_SW_CPU_MIGRATIONS;
      if (s.software && (n.config == PERF_COUNT_SW_TASK_CLOCK || n.config == PERF_COUNT_SW_CPU_CLOCK))
        s.unit = trace::CounterUnit::Nanoseconds;
      *out = s;
      return true;
    }
  if (key.size() > 1 && key[0] == 'r' && key.find_first_not_of("0123456789abcdef", 1) == std::string::npos) {
    s.type = PERF_TYPE_RAW, s.config = strtoull(key.c_str() + 1, nullptr, 16), s.per_cpu = true;
    *out = s;
    return true;
  }
  std::string pmu, event = name;
  if (size_t slash = name.find('/'); slash != std::string::npos) {
    pmu = name.substr(0, slash), event = name.substr(slash + 1);
    if (!event.empty() && event.back() == '/') event.pop_back();
  }
  if (event.empty() || event.find('/') != std::string::npos || event[0] == '.') {
    *why = "not a counter name";
    return false;
  }
  std::vector<std::string> pmus = pmu.empty() ? list_dir(sysfs) : std::vector<std::string>{pmu};
  why->clear();
  for (const std::string& p : pmus)
    if (resolve_sysfs(p, event, sysfs, &s, why)) {
      *out = s;
      return true;
    } else if (!why->empty()) {
      return false;
    }
  *why =
      "no such event: not a perf generic name and not listed in " + sysfs + "/" + (pmu.empty() ? "*" : pmu) + "/events";
  return false;
}

trace::CounterValue counter_delta(uint16_t id, const CounterReading& prev, const CounterReading& cur) {
  trace::CounterValue v{};
  v.counter = id;
  uint64_t dv = cur.value >= prev.value ? cur.value - prev.value : 0;
  uint64_t de = cur.enabled >= prev.enabled ? cur.enabled - prev.enabled : 0;
  uint64_t dr = cur.running >= prev.running ? cur.running - prev.running : 0;
  if (de == 0 || dr >= de) {  // never multiplexed (or a getrusage stand-in, which has no times)
    v.running = 10000, v.delta = dv;
  } else if (dr == 0) {
    v.running = 0, v.delta = 0;
  } else {
    v.running = uint16_t(dr * 10000 / de);
    v.delta = uint64_t(double(dv) * double(de) / double(dr) + 0.5);
  }
  return v;
}

std::string missing_counters_line(const std::vector<std::pair<std::string, std::string>>& name_reason) {
  std::vector<std::pair<std::string, std::string>> groups;  // reason -> names, in first-seen order
  for (const auto& [name, reason] : name_reason) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == reason; });
    if (it == groups.end()) groups.push_back({reason, name});
    else it->second += ", " + name;
  }
  std::string line;
  for (const auto& [reason, names] : groups) line += (line.empty() ? "" : "; ") + names + ": " + reason;
  return line;
}

void write_counter_sample(TraceWriter& w, int64_t ts, int64_t interval_ns,
                          const std::vector<trace::CounterValue>& values) {
  constexpr size_t kPerRecord = (65535 - sizeof(trace::CounterSampleRec)) / sizeof(trace::CounterValue);
  for (size_t i = 0; i < values.size(); i += kPerRecord) {
    size_t n = std::min(kPerRecord, values.size() - i);
    trace::CounterSampleRec r{};
    r.h.type = uint16_t(trace::RecType::CounterSample);
    r.ts = ts;
    r.interval_ns = interval_ns;
    r.count = uint16_t(n);
    w.append_var(&r, sizeof r, values.data() + i, n * sizeof(trace::CounterValue));
  }
}

CounterReading CpuCounters::read(const Counter& c) const {
  CounterReading sum;
  for (int fd : c.fds) {
    if (fd < 0) return rusage_reading(uint8_t(-fd));
    uint64_t v[3] = {};
    if (::read(fd, v, sizeof v) == ssize_t(sizeof v)) sum.value += v[0], sum.enabled += v[1], sum.running += v[2];
  }
  return sum;
}

size_t CpuCounters::open(TraceWriter& w, const std::string& list, int64_t period_ns, const CounterOpenOptions& o) {
  period_ns_ = period_ns;
  if (list == "off") return 0;
  std::vector<std::string> names = software_counter_names();
  std::vector<std::string> asked;
  if (list.empty()) asked = default_hardware_counter_names();
  else if (list != "none") {
    std::stringstream ss(list);
    std::string n;
    while (std::getline(ss, n, ','))
      if (!n.empty()) asked.push_back(n);
  }
  for (const std::string& n : asked)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);

  std::vector<std::pair<std::string, std::string>> missing;
  auto miss = [&](const std::string& name, trace::CounterScope scope, int err, const std::string& reason) {
    trace::CounterMissingRec m{};
    m.name_id = w.intern(name);
    m.reason_id = w.intern(reason);
    m.err = err;
    m.scope = uint8_t(scope);
    w.add(m, trace::RecType::CounterMissing);
    missing.push_back({scope == trace::CounterScope::Cpu ? name + " per CPU" : name, reason});
  };
  auto define = [&](const CounterSpec& s, trace::CounterScope scope, int cpu, uint8_t source, std::vector<int> fds) {
    trace::CounterDefRec d{};
    d.counter = uint16_t(counters_.size());
    d.scope = uint8_t(scope);
    d.unit = uint8_t(s.unit);
    d.cpu = cpu;
    d.name_id = w.intern(s.name);
    d.source = source;
    w.add(d, trace::RecType::CounterDef);
    counters_.push_back({d.counter, std::move(fds), {}});
  };

  const std::vector<pid_t> tids = own_threads();
  bool user_only = false;
  std::string opened;
  long ncpus = sysconf(_SC_NPROCESSORS_CONF);
  // The app's file descriptors come first: cutrace's counters take at most an eighth of the limit.
  rlimit lim{};
  size_t budget =
      getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? size_t(lim.rlim_cur / 8) : 1024;
  budget = std::min<size_t>(budget, 1024);
  size_t used = 0;
  auto over_budget = [&](size_t n, const char* per) {
    return "needs " + std::to_string(n) + " more file descriptors (one per " + per + "), past cutrace's budget of " +
           std::to_string(budget) + " (an eighth of RLIMIT_NOFILE, at most 1024)";
  };
  for (const std::string& name : names) {
    CounterSpec s;
    std::string why;
    if (!resolve_counter(name, o.sysfs.empty() ? kSysfs : o.sysfs, &s, &why)) {
      miss(name, trace::CounterScope::Process, 0, why);
      continue;
    }
    std::vector<int> fds;
    int err = o.perf ? 0 : ENOSYS;
    std::string reason;
    if (o.perf && used + tids.size() > budget) err = EMFILE, reason = over_budget(tids.size(), "thread");
    for (size_t i = 0; err == 0 && i < tids.size(); ++i) {
      int fd = perf_open(s, tids[i], -1, user_only);
      if (fd < 0 && (errno == EACCES || errno == EPERM) && !user_only) {
        user_only = true;  // perf_event_paranoid >= 2: user-mode counting only
        fd = perf_open(s, tids[i], -1, true);
      }
      if (fd < 0) {
        if (errno == ESRCH) continue;  // the thread ended
        err = errno;
        break;
      }
      fds.push_back(fd);
    }
    if (err == 0 && fds.empty()) err = ESRCH;
    if (err && reason.empty()) reason = refusal(err, !s.software, false);
    // Counted in the kernel: with user-mode-only counting these read 0, so they are not used
    // (their per-CPU counters are still tried: system-wide counting may be allowed).
    const bool user_blind = err == 0 && user_only && kernel_only(s);
    if (user_blind) {
      reason = "perf_event_paranoid is " + std::to_string(paranoid()) +
               ": only user-mode counting is allowed, and the kernel does this counting";
      err = EACCES;
    }
    if (err) {
      for (int fd : fds) close(fd);
      if (uint8_t f = fallback_of(s)) {
        define(s, trace::CounterScope::Process, -1, 1, {-int(f)});
        opened += (opened.empty() ? "" : ",") + name;
      } else {
        miss(name, trace::CounterScope::Process, err, reason);
      }
      if (!user_blind) continue;
    } else {
      used += fds.size();
      define(s, trace::CounterScope::Process, -1, 0, std::move(fds));
      opened += (opened.empty() ? "" : ",") + name;
    }
    if (!s.per_cpu) continue;
    if (ncpus > kMaxCpus) {
      miss(name, trace::CounterScope::Cpu, 0, "more than " + std::to_string(kMaxCpus) + " CPUs");
      continue;
    }
    if (used + size_t(ncpus) > budget) {
      miss(name, trace::CounterScope::Cpu, EMFILE, over_budget(size_t(ncpus), "CPU"));
      continue;
    }
    for (int cpu = 0; cpu < ncpus; ++cpu) {
      int fd = perf_open(s, -1, cpu, user_only);
      if (fd < 0 && errno == ENODEV) continue;  // offline CPU
      if (fd < 0) {
        miss(name, trace::CounterScope::Cpu, errno, refusal(errno, !s.software, true));
        break;
      }
      ++used;
      define(s, trace::CounterScope::Cpu, cpu, 0, {fd});
    }
  }
  w.meta("cpu_counters", opened);
  w.meta("cpu_counters_mode", user_only ? "user" : "user+kernel");
  if (!missing.empty()) {
    std::string line = missing_counters_line(missing);
    w.meta("cpu_counters_missing", line);
    log_warn("CPU counters missing: %s (the others are recorded)", line.c_str());
  }
  values_.reserve(counters_.size());
  return counters_.size();
}

void CpuCounters::sample(TraceWriter& w, int64_t now_ns) {
  if (counters_.empty()) return;
  const bool baseline = prev_ns_ == 0 || now_ns - prev_ns_ > 3 * period_ns_;
  values_.clear();
  for (Counter& c : counters_) {
    CounterReading cur = read(c);
    if (!baseline) values_.push_back(counter_delta(c.id, c.prev, cur));
    c.prev = cur;
  }
  if (!baseline) write_counter_sample(w, now_ns, now_ns - prev_ns_, values_);
  prev_ns_ = now_ns;
}

CpuCounters::~CpuCounters() {
  for (Counter& c : counters_)
    for (int fd : c.fds)
      if (fd >= 0) close(fd);
}

}  // namespace cutrace
