// Shared by the fuzz targets: runs `cutrace SUBCOMMAND ... FILE` in-process on the fuzzer's bytes,
// written to a file in a private temporary directory (the tools read paths). Run the targets
// with -close_fd_mask=3: the tools' output is closed, libFuzzer's own reports are kept. A
// subcommand that fails throws CLI::RuntimeError: that is the expected
// outcome for bad input, the fuzzer looks for crashes, sanitizer reports, hangs and leaks.
#pragma once
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/cmd/commands.h"

namespace cutrace_fuzz {

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* base = getenv("TMPDIR");
    std::string t = std::string(base && *base ? base : "/tmp") + "/cutrace-fuzz-XXXXXX";
    if (!mkdtemp(t.data())) {
      perror("mkdtemp");
      abort();
    }
    return t;
  }();
  return dir;
}

// Writes the bytes to <scratch>/in.cutrace and returns its path.
inline std::string write_input(const uint8_t* data, size_t size) {
  std::string path = scratch_dir() + "/in.cutrace";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) abort();
  size_t off = 0;
  while (off < size) {
    ssize_t n = ::write(fd, data + off, size - off);
    if (n <= 0) abort();
    off += size_t(n);
  }
  ::close(fd);
  return path;
}

// Runs the CLI with these arguments (argv[0] added); returns its exit status.
inline int run_cli(std::vector<std::string> args) {
  CLI::App app{"cutrace", "cutrace"};
  app.require_subcommand(1);
  add_merge_command(app);
  add_dump_command(app);
  add_summary_command(app);
  add_export_command(app);
  std::vector<char*> argv;
  std::string argv0 = "cutrace";
  argv.push_back(argv0.data());
  for (std::string& a : args) argv.push_back(a.data());
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::Error& e) {
    fflush(stdout);
    return e.get_exit_code();
  }
  fflush(stdout);
  return 0;
}

// `cutrace export --format FORMAT -o <scratch>/OUT_NAME` on the bytes (the fuzz_export_* targets);
// the output is removed afterwards.
inline void export_once(const uint8_t* data, size_t size, const char* format, const char* out_name) {
  std::string in = write_input(data, size);
  std::string out = scratch_dir() + "/" + out_name;
  run_cli({"export", in, "--format", format, "-o", out, "-q"});
  ::unlink(out.c_str());
}

}  // namespace cutrace_fuzz
