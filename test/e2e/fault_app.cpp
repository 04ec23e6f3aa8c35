// Fault-tolerance scenarios for process_checks.py: the process ends in an unusual way,
// forks, execs, loses threads or hits a file-size limit. Every mode prints what it launched.
//   fault_app loop SECONDS        launch batches of 10 x 10 us kernels (usleep 10 ms between) for
//                                 SECONDS (~900 launches/s: blocks fill slower than once a second,
//                                 so only the timed flush writes them), printing
//                                 "mono_ns=T launches=N" every 50 ms (to be killed meanwhile)
//   fault_app exit|_exit|abort|throw N
//                                 N launches, synchronise, then exit(0) / _exit(0) / abort() /
//                                 throw an uncaught exception (std::terminate -> abort)
//   fault_app wait N              N launches, synchronise, print "ready", then sleep until a
//                                 signal arrives (process_checks.py sends SIGTERM or SIGINT)
//   fault_app fork N M K          N launches, fork; the child launches M and exits(0); the parent
//                                 waits for it, then launches K more
//   fault_app exec N PROG [ARG..] N launches, then execv(PROG, ARG..)
//   fault_app threads T L         T threads: the odd ones launch L kernels and exit at once, the
//                                 even ones launch L, then 2 x L more after the odd ones ended
//   fault_app many N              N launches in batches of 500, 3 ms apart (trace of ~N x 20 bytes)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>
#include "test/e2e/common.h"

static CUfunction g_f;

static void launch(int n, CUstream s = nullptr) {
  for (int i = 0; i < n; ++i) CHECK(cuLaunchKernel(g_f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
}

static void setup() {
  init_primary();
  g_f = get_function(load_fake_module("kernel k_fault 10000\n"), "k_fault");
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: fault_app MODE ARGS\n");
    return 2;
  }
  std::string mode = argv[1];
  int n = atoi(argv[2]);
  setup();
  if (mode == "loop") {
    auto start = std::chrono::steady_clock::now();
    auto end = start + std::chrono::duration<double>(atof(argv[2]));
    auto next_print = start;
    long total = 0;
    while (std::chrono::steady_clock::now() < end) {
      launch(10);
      total += 10;
      CHECK(cuCtxSynchronize());
      auto now = std::chrono::steady_clock::now();
      if (now >= next_print) {  // CLOCK_MONOTONIC ns, as Python's time.monotonic_ns()
        printf("mono_ns=%lld launches=%ld\n",
               (long long)std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count(), total);
        fflush(stdout);
        next_print = now + std::chrono::milliseconds(50);
      }
      usleep(10000);
    }
    printf("launches=%ld\n", total);
    return 0;
  }
  if (mode == "exit" || mode == "_exit" || mode == "abort" || mode == "throw" || mode == "wait") {
    launch(n);
    CHECK(cuCtxSynchronize());
    printf("%s: launched %d\n", mode.c_str(), n);
    fflush(stdout);
    if (mode == "exit") exit(0);
    if (mode == "_exit") _exit(0);
    if (mode == "abort") abort();
    if (mode == "throw") throw std::runtime_error("fault_app: uncaught");
    printf("ready\n");
    fflush(stdout);
    for (;;) pause();
  }
  if (mode == "fork" && argc == 5) {
    launch(n);
    CHECK(cuCtxSynchronize());
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      setup();  // the child sets its context up again (the fake driver allows it)
      launch(atoi(argv[3]));
      CHECK(cuCtxSynchronize());
      printf("child pid=%d launched %d\n", int(getpid()), atoi(argv[3]));
      exit(0);
    }
    int st = 0;
    waitpid(child, &st, 0);
    launch(atoi(argv[4]));
    CHECK(cuCtxSynchronize());
    printf("parent pid=%d child_status=%d\n", int(getpid()), st);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
  }
  if (mode == "exec" && argc >= 4) {
    launch(n);
    CHECK(cuCtxSynchronize());
    printf("exec: pid=%d launched %d\n", int(getpid()), n);
    fflush(stdout);
    execv(argv[3], argv + 3);
    perror("execv");
    return 1;
  }
  if (mode == "threads" && argc == 4) {
    int l = atoi(argv[3]);
    CUcontext ctx;
    CHECK(cuCtxGetCurrent(&ctx));
    std::vector<std::thread> odd, even;
    std::atomic<int> odd_done{0};
    for (int t = 0; t < n; ++t) {
      auto body = [&, t] {
        CHECK(cuCtxSetCurrent(ctx));
        CUstream s;
        CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        launch(l, s);
        if (t % 2) {
          ++odd_done;  // returns without synchronising: the thread ends with work in flight
          return;
        }
        while (odd_done.load() < n / 2) usleep(100);
        usleep(5000);  // the odd threads have exited by now
        launch(2 * l, s);
        CHECK(cuStreamSynchronize(s));
      };
      (t % 2 ? odd : even).emplace_back(body);
    }
    for (auto& th : odd) th.join();
    for (auto& th : even) th.join();
    printf("threads: launches=%d\n", (n / 2) * l + (n - n / 2) * 3 * l);
    return 0;
  }
  if (mode == "many") {
    for (int done = 0; done < n; done += 500) {  // batches the 4096-slot ring always holds
      launch(std::min(500, n - done));
      CHECK(cuCtxSynchronize());
      usleep(3000);
    }
    printf("many: launched %d\n", n);
    return 0;
  }
  fprintf(stderr, "fault_app: bad mode %s\n", mode.c_str());
  return 2;
}
