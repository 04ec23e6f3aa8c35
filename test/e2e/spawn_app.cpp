// Starts programs the way Python's subprocess does (vfork(), then exec in the child, trying each
// PATH entry until one works) between kernel launches: 5 k_before, then a vfork child that first
// execs a path that does not exist and then /bin/true, then 5 k_after; waits for the child.
// A vfork child shares the parent's memory: an exec there must leave the parent's recording as it
// is (one trace file with the 10 kernels).
#include <sys/wait.h>
#include <unistd.h>
#include "test/e2e/common.h"

int main() {
  init_primary();
  CUmodule m = load_fake_module("kernel k_before 10000\nkernel k_after 10000\n");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 5; ++i)
    CHECK(cuLaunchKernel(get_function(m, "k_before"), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));

  char* const argv_missing[] = {const_cast<char*>("missing"), nullptr};
  char* const argv_true[] = {const_cast<char*>("true"), nullptr};
  pid_t pid = vfork();
  if (pid == 0) {
    execv("/nonexistent-dir/missing", argv_missing);  // fails: ENOENT, as for a PATH entry without it
    execv("/bin/true", argv_true);
    _exit(127);
  }
  if (pid < 0) {
    perror("vfork");
    return 1;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "spawn_app: child status %d\n", status);
    return 1;
  }

  for (int i = 0; i < 5; ++i)
    CHECK(cuLaunchKernel(get_function(m, "k_after"), 1, 1, 1, 32, 1, 1, 0, s, nullptr, nullptr));
  CHECK(cuStreamSynchronize(s));
  printf("spawn_app: OK\n");
  return 0;
}
