// cutrace snapshot PID: asks the flight recorder (--capture-range flight:SECONDS) of PID and of
// its traced descendants to write the records it holds (the last SECONDS) to its trace file, as
// SIGUSR2 does. Through the control file of `cutrace start|stop PID` (tools/cmd/control.cpp),
// which the collector reads ten times a second and removes; this waits for that.
#include <time.h>
#include <unistd.h>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cmd/commands.h"

namespace {

int snapshot(int pid, double wait_s) {
  std::vector<std::string> paths;
  int rc = control_tree(pid, "snapshot", &paths);
  if (rc != 0) return rc;
  const int rounds = int(wait_s * 100);
  for (int i = 0; i <= rounds; ++i) {
    size_t left = 0;
    for (const std::string& p : paths) left += access(p.c_str(), F_OK) == 0;
    if (left == 0) {
      printf("cutrace snapshot: taken by %zu process%s\n", paths.size(), paths.size() == 1 ? "" : "es");
      return 0;
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, nullptr);
  }
  fprintf(stderr,
          "cutrace snapshot: not taken within %g s (is the process stopped, or its collector not started?); the "
          "request stays and is served when its collector next looks\n",
          wait_s);
  return 1;
}

}  // namespace

void add_snapshot_command(CLI::App& app) {
  auto pid = std::make_shared<int>(0);
  auto wait_s = std::make_shared<double>(5);
  CLI::App* sub = app.add_subcommand(
      "snapshot", "Write the last SECONDS a job running with --capture-range flight:SECONDS holds to its trace");
  sub->add_option("pid", *pid, "Process id (its traced descendants are included)")->required();
  sub->add_option("--wait", *wait_s, "Seconds to wait for each process to take the request (default 5)")
      ->check(CLI::Range(0.0, 3600.0));
  sub->callback([pid, wait_s] { throw CLI::RuntimeError(snapshot(*pid, *wait_s)); });
}
