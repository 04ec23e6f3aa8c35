// Whether the traces a tool reads are one run of one job. A directory can hold the traces of
// several runs: `cutrace record -o DIR` used twice, two jobs sharing an output directory, or
// workers that torchrun restarted. The tools then add them up as the processes of one job; the
// notes from mixed_runs() say so, in `cutrace summary` (text and JSON), the report's dashboard,
// `cutrace merge` and `cutrace export`.
//
// What tells runs apart (Meta records, docs/FORMAT.md):
//   rank       a rank from a launcher (launcher other than "none") that appears in two traces,
//              not counting a process whose parent has a trace too (a worker's CUDA subprocess,
//              which inherits the worker's rank variables; Meta "ppid")
//   world_size launchers' traces of different world sizes
//   session    the id `cutrace record` gives every process it starts (CUTRACE_SESSION): traces
//              without a launcher rank from more than one session (or some with, some without
//              one) come from separate runs. Processes of one run without launcher ranks (a
//              job and its CUDA subprocesses) share a session and are not flagged.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace cutrace {
class TraceReader;

namespace runs {

struct Trace {
  std::string file, host, launcher, session;
  int64_t pid = 0;
  int64_t ppid = 0;         // 0: not recorded
  int64_t rank = -1;        // -1: not recorded
  int64_t world_size = -1;  // -1: not recorded
  int64_t start_realtime_ns = 0;
};

Trace identify(const TraceReader& r);  // from an opened reader's Meta records

// One note per finding, empty when the traces can be one run.
std::vector<std::string> mixed_runs(const std::vector<Trace>& traces);

}  // namespace runs
}  // namespace cutrace
