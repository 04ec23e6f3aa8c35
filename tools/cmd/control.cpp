// cutrace start PID / cutrace stop PID: open or close a capture window in a running job without
// restarting it. The shim's collector polls a control file, DIR/.cutrace-ctl.<pid>, ten times a
// second (DIR = the process's CUTRACE_OUTPUT); this command writes "start" or "stop" into it for
// PID and for every descendant of PID that has the shim loaded (all ranks of a torchrun job).
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cmd/commands.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::vector<int> children(int pid) {
  std::vector<int> out;
  std::istringstream all(read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  for (int c; all >> c;) out.push_back(c);
  return out;
}

// CUTRACE_OUTPUT of a process whose shim is loaded, or "" if it has none.
std::string traced_output_dir(int pid) {
  std::string base = "/proc/" + std::to_string(pid);
  if (read_file(base + "/maps").find("libcutrace.so") == std::string::npos) return "";
  std::string env = read_file(base + "/environ");
  for (size_t i = 0; i < env.size();) {
    size_t end = env.find('\0', i);
    std::string kv = env.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (kv.rfind("CUTRACE_OUTPUT=", 0) == 0) return kv.substr(15);
    if (end == std::string::npos) break;
    i = end + 1;
  }
  return "cutrace-trace";  // the shim's default, relative to the process's working directory
}

}  // namespace

int control_tree(int root, const std::string& verb, std::vector<std::string>* written) {
  std::vector<int> todo{root};
  int done = 0;
  while (!todo.empty()) {
    int pid = todo.back();
    todo.pop_back();
    for (int c : children(pid)) todo.push_back(c);
    std::string dir = traced_output_dir(pid);
    if (dir.empty()) continue;
    if (dir[0] != '/') dir = "/proc/" + std::to_string(pid) + "/cwd/" + dir;  // relative to its cwd
    std::string path = dir + "/.cutrace-ctl." + std::to_string(pid);
    // O_NONBLOCK: a FIFO put at the name fails (ENXIO) instead of blocking this command.
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, verb.data(), verb.size()) != ssize_t(verb.size())) {
      fprintf(stderr, "cutrace %s: cannot write %s\n", verb.c_str(), path.c_str());
    } else {
      printf("cutrace %s: pid %d (%s)\n", verb.c_str(), pid, path.c_str());
      if (written) written->push_back(path);
      ++done;
    }
    if (fd >= 0) close(fd);
  }
  if (done == 0) {
    fprintf(stderr, "cutrace %s: no process under pid %d has the cutrace shim loaded\n", verb.c_str(), root);
    return 1;
  }
  return 0;
}

namespace {

void add_control(CLI::App& app, const std::string& verb, const std::string& help) {
  auto pid = std::make_shared<int>(0);
  CLI::App* sub = app.add_subcommand(verb, help);
  sub->add_option("pid", *pid, "Process id (its traced descendants are included)")->required();
  sub->callback([pid, verb] { throw CLI::RuntimeError(control_tree(*pid, verb, nullptr)); });
}

}  // namespace

void add_control_commands(CLI::App& app) {
  add_control(app, "start", "Open a capture window in a running traced job (run it with --capture-range=manual)");
  add_control(app, "stop", "Close the capture window of a running traced job");
}
