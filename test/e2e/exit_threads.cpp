// Threads launching when the process ends: THREADS threads launch k_exit on their own streams,
// each launch with grid (i + 1, t + 1, 1) for its i-th launch on thread t, until the end. After
// MS milliseconds the main thread ends the process by HOW: exit (exit(0) while the others
// launch), or the signal SIGTERM, SIGINT or SIGHUP sent to itself.
// PROGRESS (a file) receives, per thread, its tid and the CLOCK_MONOTONIC time at which each of
// its launches had returned (the last 1M launches kept), written as they happen into a shared
// mapping, so that they survive the process: capture_checks.py compares them with the trace.
// GAP_US paces each thread (a pause between its launches; 0: none).
//   exit_threads PROGRESS HOW [threads=4] [ms=300] [gap_us=0]
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <atomic>
#include <thread>
#include <vector>
#include "test/e2e/common.h"

namespace {
constexpr long kRing = 1 << 20;
struct ThreadLog {
  std::atomic<int64_t> tid;
  std::atomic<int64_t> launches;       // launches returned so far
  std::atomic<int64_t> ret_ns[kRing];  // return time of launch i at [i % kRing]
};

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: exit_threads PROGRESS exit|SIGTERM|SIGINT|SIGHUP [threads] [ms]\n");
    return 2;
  }
  std::string how = argv[2];
  int threads = argc > 3 ? atoi(argv[3]) : 4;
  int ms = argc > 4 ? atoi(argv[4]) : 300;
  int gap_us = argc > 5 ? atoi(argv[5]) : 0;
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  size_t bytes = sizeof(ThreadLog) * size_t(threads);
  if (fd < 0 || ftruncate(fd, off_t(bytes)) != 0) return 2;
  auto* logs = static_cast<ThreadLog*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  if (logs == MAP_FAILED) return 2;
  CUcontext ctx = init_primary();
  CUmodule m = load_fake_module("kernel k_exit 100\n");
  CUfunction f = get_function(m, "k_exit");
  std::atomic<int> started{0};
  for (int t = 0; t < threads; ++t)
    std::thread([&, t] {
      CHECK(cuCtxSetCurrent(ctx));
      CUstream s;
      CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
      ThreadLog& log = logs[t];
      log.tid.store(syscall(SYS_gettid));
      started.fetch_add(1);
      for (int64_t i = 0;; ++i) {
        if (cuLaunchKernel(f, unsigned(i + 1), unsigned(t + 1), 1, 32, 1, 1, 0, s, nullptr, nullptr) != CUDA_SUCCESS)
          return;  // the driver is shutting down with the process
        log.ret_ns[i % kRing].store(now_ns(), std::memory_order_relaxed);
        log.launches.store(i + 1, std::memory_order_release);
        if (gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
      }
    }).detach();
  while (started.load() < threads) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  if (how == "exit") exit(0);
  int sig = how == "SIGTERM" ? SIGTERM : how == "SIGINT" ? SIGINT : how == "SIGHUP" ? SIGHUP : 0;
  if (!sig) return 2;
  kill(getpid(), sig);
  for (;;) pause();
}
