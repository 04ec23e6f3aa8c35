// cutrace: the command-line entry point. Each subcommand lives in tools/cmd/<name>.cpp;
// a failing subcommand throws CLI::RuntimeError(exit code) after printing its message.
#include <CLI/CLI.hpp>

#include "tools/cmd/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"cutrace: profiler for CUDA training jobs", "cutrace"};
  app.set_version_flag("--version", "cutrace 0.1.0");
  app.require_subcommand(1);
  add_record_command(app);
  add_control_commands(app);
  add_merge_command(app);
  add_dump_command(app);
  add_summary_command(app);
  add_diff_command(app);
  add_export_command(app);
  add_report_command(app);
  add_serve_command(app);
  add_status_command(app);
  add_hang_command(app);
  add_snapshot_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
