// Runs a `cutrace` subcommand in-process with stdout sent to /dev/null, for tests that only need
// its exit status (the fuzz regression tests): `app` holds the subcommand (add_*_command).
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

inline int run_quietly(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"cutrace"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  fflush(stdout);
  int saved = dup(1);
  int null = ::open("/dev/null", O_WRONLY);
  dup2(null, 1);
  int rc = 0;
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::Error& e) {
    rc = e.get_exit_code();
  }
  fflush(stdout);
  dup2(saved, 1);
  ::close(saved);
  ::close(null);
  return rc;
}
