// One function per `cutrace` subcommand; each registers its subcommand on the app.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

void add_record_command(CLI::App& app);    // tools/cmd/record.cpp
void add_control_commands(CLI::App& app);  // tools/cmd/control.cpp: start, stop
void add_merge_command(CLI::App& app);     // tools/cmd/merge.cpp
void add_dump_command(CLI::App& app);      // tools/cmd/dump.cpp
void add_summary_command(CLI::App& app);   // tools/cmd/summary.cpp
void add_diff_command(CLI::App& app);      // tools/cmd/diff.cpp
void add_export_command(CLI::App& app);    // tools/cmd/export.cpp: chrome, perfetto, sqlite
void add_report_command(CLI::App& app);    // tools/cmd/report.cpp: self-contained HTML report
void add_serve_command(CLI::App& app);     // tools/cmd/serve.cpp
void add_status_command(CLI::App& app);    // tools/cmd/status.cpp
void add_hang_command(CLI::App& app);      // tools/cmd/hang.cpp
void add_snapshot_command(CLI::App& app);  // tools/cmd/snapshot.cpp

// tools/cmd/control.cpp: writes `verb` into the control file of PID and of each descendant with
// the shim loaded; the paths written go to *written. Returns the exit status (1: none found).
int control_tree(int root, const std::string& verb, std::vector<std::string>* written);
