// What the file header says about the process: host, pid, command line, launcher rank.
#pragma once
#include <string>
#include "trace/writer.h"

namespace cutrace {

struct RankInfo {
  int rank = -1, local_rank = -1, world_size = -1;
  std::string launcher;  // torchrun, openmpi, mpich, slurm, or empty
};

RankInfo detect_rank();  // from the launcher's environment
std::string host_name();
std::string command_line();
// DIR/<host>.rank<R>.pid<P>.cutrace (rank 0 when no launcher says otherwise).
std::string trace_path(const std::string& dir, const RankInfo& rank);
// Creates dir (and parents). False with a message if it cannot be created or written.
bool make_output_dir(const std::string& dir, std::string* err);
void write_process_meta(TraceWriter& w, const RankInfo& rank, const char* gpu_timing);
// Device records for every device the driver reports.
void write_devices(TraceWriter& w);

}  // namespace cutrace
