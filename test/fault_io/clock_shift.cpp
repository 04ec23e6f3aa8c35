// Test interposer (LD_PRELOAD): a host whose wall clock is off. CLOCK_REALTIME (and its coarse
// variant) read CUTRACE_TEST_REALTIME_SHIFT_NS ns ahead (negative: behind); with
// CUTRACE_TEST_HOSTNAME, gethostname() answers that name. CLOCK_MONOTONIC is left alone (timed
// waits on it stay right); a time namespace (unshare --time) moves that one.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

namespace {

using ClockFn = int (*)(clockid_t, struct timespec*);

long long shift_ns() {
  static const long long v = [] {
    const char* s = getenv("CUTRACE_TEST_REALTIME_SHIFT_NS");
    return s && *s ? atoll(s) : 0;
  }();
  return v;
}

}  // namespace

extern "C" int clock_gettime(clockid_t id, struct timespec* ts) {
  static const ClockFn real = reinterpret_cast<ClockFn>(dlsym(RTLD_NEXT, "clock_gettime"));
  int rc = real(id, ts);
  if (rc == 0 && ts && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) && shift_ns()) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ns();
    ts->tv_sec = time_t(ns / 1000000000LL);
    ts->tv_nsec = long(ns % 1000000000LL);
  }
  return rc;
}

extern "C" int gethostname(char* name, size_t len) {
  const char* fake = getenv("CUTRACE_TEST_HOSTNAME");
  if (fake && *fake) {
    if (strlen(fake) + 1 > len) return -1;
    memcpy(name, fake, strlen(fake) + 1);
    return 0;
  }
  using HostFn = int (*)(char*, size_t);
  static const HostFn real = reinterpret_cast<HostFn>(dlsym(RTLD_NEXT, "gethostname"));
  return real(name, len);
}
