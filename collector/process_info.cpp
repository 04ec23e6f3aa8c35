#include "collector/process_info.h"
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include "runtime/driver.h"
#include "runtime/ticks.h"

namespace cutrace {

static int env_int(const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  long x = strtol(v, &end, 10);
  return (end && *end == 0 && x >= 0) ? int(x) : -1;
}

RankInfo detect_rank() {
  struct Source {
    const char *launcher, *rank, *local, *world;
  };
  static const Source sources[] = {
      {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
      {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"mpich", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
      {"pmix", "PMIX_RANK", "MPI_LOCALRANKID", "PMIX_SIZE"},
      {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
  };
  RankInfo r;
  for (const Source& s : sources) {
    int rank = env_int(s.rank);
    if (rank < 0) continue;
    r.rank = rank;
    r.local_rank = env_int(s.local);
    r.world_size = env_int(s.world);
    r.launcher = s.launcher;
    break;
  }
  return r;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || !buf[0]) return "localhost";
  for (char* p = buf; *p; ++p)
    if (*p == '/' || *p == ' ') *p = '_';
  return buf;
}

std::string command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!s.empty() && s.back() == '\0') s.pop_back();
  for (char& c : s)
    if (c == '\0') c = ' ';
  return s;
}

std::string trace_path(const std::string& dir, const RankInfo& rank) {
  std::ostringstream p;
  p << dir << '/' << host_name() << ".rank" << (rank.rank < 0 ? 0 : rank.rank) << ".pid" << getpid() << ".cutrace";
  return p.str();
}

bool make_output_dir(const std::string& dir, std::string* err) {
  std::string partial;
  std::stringstream ss(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/') partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += part;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      *err = "cannot create output directory " + partial + ": " + strerror(errno);
      return false;
    }
    partial += '/';
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    *err = "output directory " + dir + " is not writable: " + strerror(errno);
    return false;
  }
  return true;
}

void write_process_meta(TraceWriter& w, const RankInfo& rank, const char* gpu_timing) {
  w.meta("cutrace_version", "0.1.0");
  w.meta("host", host_name());
  w.meta("pid", std::to_string(getpid()));
  w.meta("ppid", std::to_string(getppid()));
  w.meta("cmdline", command_line());
  w.meta("start_realtime_ns", std::to_string(real_ns()));
  w.meta("start_monotonic_ns", std::to_string(mono_ns()));
  w.meta("gpu_timing", gpu_timing);
  w.meta("rank", std::to_string(rank.rank < 0 ? 0 : rank.rank));
  w.meta("local_rank", std::to_string(rank.local_rank < 0 ? 0 : rank.local_rank));
  w.meta("world_size", std::to_string(rank.world_size < 0 ? 1 : rank.world_size));
  w.meta("launcher", rank.launcher.empty() ? "none" : rank.launcher);
  if (const char* s = getenv("CUTRACE_SESSION"); s && *s)
    w.meta("session", std::string(s).substr(0, 64));  // cutrace record's run id
  int version = 0;
  const Driver& d = driver();
  if (d.cuDriverGetVersion && d.cuDriverGetVersion(&version) == CUDA_SUCCESS)
    w.meta("driver_version", std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10));
}

void write_devices(TraceWriter& w) {
  const Driver& d = driver();
  int n = 0;
  if (!d.cuDeviceGetCount || d.cuDeviceGetCount(&n) != CUDA_SUCCESS || !d.cuDeviceGetAttribute) return;
  for (int dev = 0; dev < n; ++dev) {
    trace::DeviceRec r{};
    r.device = uint16_t(dev);
    char name[256] = {};
    if (d.cuDeviceGetName) d.cuDeviceGetName(name, sizeof name - 1, dev);
    r.name_id = w.intern(name[0] ? name : "unknown GPU");
    int v = 0;
    if (d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS)
      r.cc_major = uint16_t(v);
    if (d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS)
      r.cc_minor = uint16_t(v);
    if (d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS)
      r.sm_count = uint16_t(v);
    if (d.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) == CUDA_SUCCESS) r.pci_bus = uint32_t(v);
    size_t mem = 0;
    if (d.cuDeviceTotalMem && d.cuDeviceTotalMem(&mem, dev) == CUDA_SUCCESS) r.total_mem = mem;
    CUuuid uuid{};
    if (d.cuDeviceGetUuid && d.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) memcpy(r.uuid, uuid.bytes, 16);
    w.add(r, trace::RecType::Device);
  }
}

}  // namespace cutrace
