// Exits with status 3 right after launching one kernel, without synchronising or cleaning up:
// run.sh checks that the exit status and stdout are the same with and without cutrace, and that
// the trace of the launch is still written (exit() runs the shim's shutdown).
#include "test/e2e/common.h"

int main() {
  init_primary();
  CUmodule m = load_fake_module("kernel k_before_exit 10000\n");
  CHECK(cuLaunchKernel(get_function(m, "k_before_exit"), 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr));
  printf("exit_code: launched 1 kernel, exiting with status 3\n");
  exit(3);
}
