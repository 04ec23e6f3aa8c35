// exec*: the new program replaces this one without running atexit handlers, so the collector
// is shut down (everything written, End record) before the real exec; if the exec fails, the
// process carries on and a new collector starts with its next recorded call.
#include <dlfcn.h>
#include <unistd.h>
#include <cerrno>
#include <cstdarg>
#include <vector>
#include "collector/collector.h"
#include "runtime/driver.h"
#include "trace/format.h"

namespace {

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(cutrace::real_dlsym(RTLD_NEXT, name));
}

template <class F, class... A>
int around_exec(const char* name, A... args) {
  static F real = next<F>(name);
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  cutrace::collector_before_exec();
  int r = real(args...);
  int saved = errno;
  cutrace::collector_after_failed_exec();
  errno = saved;
  return r;
}

// execl* take their arguments inline: collect them into an argv array.
std::vector<char*> collect(const char* arg0, va_list ap, char* const** envp) {
  std::vector<char*> argv{const_cast<char*>(arg0)};
  while (char* a = va_arg(ap, char*)) argv.push_back(a);
  argv.push_back(nullptr);
  if (envp) *envp = va_arg(ap, char* const*);
  return argv;
}

using Exec3 = int (*)(const char*, char* const*, char* const*);
using Exec2 = int (*)(const char*, char* const*);
using FExec = int (*)(int, char* const*, char* const*);

}  // namespace

#define CUTRACE_EXEC extern "C" __attribute__((visibility("default")))
CUTRACE_EXEC int execve(const char* p, char* const argv[], char* const envp[]) {
  return around_exec<Exec3>("execve", p, argv, envp);
}
CUTRACE_EXEC int execv(const char* p, char* const argv[]) { return around_exec<Exec2>("execv", p, argv); }
CUTRACE_EXEC int execvp(const char* f, char* const argv[]) { return around_exec<Exec2>("execvp", f, argv); }
CUTRACE_EXEC int execvpe(const char* f, char* const argv[], char* const envp[]) {
  return around_exec<Exec3>("execvpe", f, argv, envp);
}
CUTRACE_EXEC int fexecve(int fd, char* const argv[], char* const envp[]) {
  return around_exec<FExec>("fexecve", fd, argv, envp);
}
CUTRACE_EXEC int execl(const char* p, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap, nullptr);
  va_end(ap);
  return execv(p, argv.data());
}
CUTRACE_EXEC int execlp(const char* f, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap, nullptr);
  va_end(ap);
  return execvp(f, argv.data());
}
CUTRACE_EXEC int execle(const char* p, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  char* const* envp = nullptr;
  std::vector<char*> argv = collect(arg, ap, &envp);
  va_end(ap);
  return execve(p, argv.data(), envp);
}
