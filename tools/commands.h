// One function per `cutrace` subcommand; each registers its subcommand on the app.
#pragma once

namespace CLI {
class App;
}

void add_record_command(CLI::App& app);   // tools/cmd_record.cpp
void add_control_commands(CLI::App& app); // tools/cmd_control.cpp: start, stop
void add_merge_command(CLI::App& app);    // tools/cmd_merge.cpp
void add_dump_command(CLI::App& app);     // tools/cmd_dump.cpp
void add_summary_command(CLI::App& app);  // tools/cmd_summary.cpp
void add_export_command(CLI::App& app);   // tools/cmd_export.cpp: chrome, perfetto, sqlite
void add_report_command(CLI::App& app);   // tools/cmd_report.cpp: self-contained HTML report
void add_serve_command(CLI::App& app);    // tools/cmd_serve.cpp
