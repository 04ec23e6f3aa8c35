// Test interposer (LD_PRELOAD, ahead of the shim): a disk that fills up. Writes to files whose
// name ends in ".cutrace" succeed until CUTRACE_TEST_DISK_FULL_AFTER bytes have gone to them in
// this process; the write that crosses the limit is cut short (as the kernel does when the last
// free block is used) and every later one fails with ENOSPC. Every other write (stdout, the
// application's own files) is untouched. No root, no file system of its own: CI runs it anywhere.
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>

namespace {

using WriteFn = ssize_t (*)(int, const void*, size_t);
std::atomic<long long> g_written{0};

long long limit() {
  static const long long v = [] {
    const char* s = getenv("CUTRACE_TEST_DISK_FULL_AFTER");
    return s && *s ? atoll(s) : -1;
  }();
  return v;
}

bool is_trace(int fd) {
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n < 8) return false;
  path[n] = 0;
  return strcmp(path + n - 8, ".cutrace") == 0;
}

}  // namespace

extern "C" ssize_t write(int fd, const void* buf, size_t n) {
  static const WriteFn real = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  if (limit() < 0 || n == 0 || fd <= 2 || !is_trace(fd)) return real(fd, buf, n);
  long long used = g_written.load();
  long long room = limit() - used;
  if (room <= 0) {
    errno = ENOSPC;
    return -1;
  }
  size_t allowed = n < size_t(room) ? n : size_t(room);
  ssize_t w = real(fd, buf, allowed);
  if (w > 0) g_written += w;
  return w;
}
