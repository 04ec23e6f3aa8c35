// cutrace record -o DIR [options] -- COMMAND [ARGS...]
// Runs COMMAND with the shim preloaded; every process of it that uses CUDA writes one trace
// file into DIR. The exit status is COMMAND's.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/gpu_sample.h"
#include "tools/analysis/losses.h"
#include "tools/cmd/commands.h"
#include "tools/cmd/status.h"
#include "tools/common/format_util.h"
#include "trace/reader.h"

namespace {

struct RecordOptions {
  std::string out = "cutrace-trace";
  std::string gpu_timing = "auto";
  std::string gpu_sample;
  std::string backtrace = "sync";
  std::string python_stacks = "sync";
  int sample_hz = 10;
  std::string cpu_counters;  // "" = the shim's defaults
  bool verbose = false;
  bool quiet = false;  // no live status line
  std::string capture_range = "process";
  bool capture_range_given = false;  // --capture-range on the command line
  std::string capture_steps;
  long capture_repeat = 0;
  double delay = 0, duration = 0;
  double buffer_mb = 0;       // 0: the shim's default (CUTRACE_BUFFER_MB)
  double hang_timeout = 300;  // CUTRACE_HANG_TIMEOUT (set only when given: the environment's stands otherwise)
  bool hang_timeout_given = false;
  std::vector<std::string> command;
};

pid_t g_child = -1;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string p(buf);
  return p.substr(0, p.rfind('/'));
}

// The shim: $CUTRACE_SHIM, else ../lib/libcutrace.so next to this binary.
std::string find_shim() {
  if (const char* e = getenv("CUTRACE_SHIM")) return e;
  std::string p = self_dir() + "/../lib/libcutrace.so";
  char real[PATH_MAX];
  return realpath(p.c_str(), real) ? std::string(real) : p;
}

std::string absolute(const std::string& dir) {
  if (!dir.empty() && dir[0] == '/') return dir;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + dir : dir;
}

bool make_dirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return access(dir.c_str(), W_OK | X_OK) == 0;
}

// The names of the trace files in dir: regular *.cutrace files (not the control files
// .cutrace-ctl.<pid>, not a FIFO or a directory named like a trace).
std::set<std::string> list_traces(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  std::set<std::string> names;
  for (const std::string& path : cutrace::list_trace_files(dir)) names.insert(path.substr(path.rfind('/') + 1));
  return names;
}

// Counts the files of this run that open as traces; names the others (an empty file is what a
// full disk leaves) on stderr.
size_t count_new_traces(const std::string& dir, const std::set<std::string>& before) {
  size_t n = 0;
  for (const std::string& name : list_traces(dir)) {
    if (before.count(name)) continue;
    std::string path = dir + "/" + name, err;
    cutrace::TraceReader r;
    struct stat st {};
    if (r.open(path, &err)) {
      ++n;
    } else if (stat(path.c_str(), &st) == 0 && st.st_size == 0) {
      fprintf(stderr, "cutrace: %s is empty (0 bytes: nothing of the trace reached the disk), not counted\n",
              cutrace::tools::printable(path).c_str());
    } else {
      fprintf(stderr, "cutrace: %s; not counted\n", cutrace::tools::printable(err).c_str());  // err names the file
    }
  }
  return n;
}

// One line per new trace that is missing records: how many, of how many, and why.
void print_losses(const std::string& dir, const std::set<std::string>& before) {
  for (const std::string& name : list_traces(dir)) {
    if (before.count(name)) continue;
    cutrace::TraceReader r;
    std::string err;
    if (!r.open(dir + "/" + name, &err)) continue;
    r.read([](const cutrace::Record&) {});
    const cutrace::ReadStatus& s = r.status();
    uint64_t dropped = std::max(s.complete ? s.end.dropped : 0, s.dropped);
    if (!dropped) continue;
    int64_t rank = r.meta_int("rank", -1);
    std::string who = rank >= 0 ? "rank " + std::to_string(rank) : name;
    fprintf(stderr, "cutrace: %s: %s\n", cutrace::tools::printable(who).c_str(),
            cutrace::tools::loss_sentence(cutrace::tools::loss_facts(r, dropped)).c_str());
  }
}

// Waits for the child, rewriting one status line on the terminal (stderr) once a second from the
// processes' live status files (trace/live_status.h); the line is cleared at the end.
void wait_with_status_line(const std::string& dir, int* status) {
  bool shown = false;
  for (int tick = 0;; ++tick) {
    pid_t r = waitpid(g_child, status, WNOHANG);
    if (r == g_child || (r < 0 && errno != EINTR)) break;
    if (tick % 10 == 9) {
      std::vector<cutrace::LiveStatus> running = cutrace::tools::live_job(dir).running;
      if (!running.empty() || shown) {
        std::string line = "cutrace: recording: " + cutrace::tools::live_line(running);
        fprintf(stderr, "\r%s\033[K", line.c_str());
        fflush(stderr);
        shown = true;
      }
    }
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, nullptr);
  }
  if (shown) fprintf(stderr, "\r\033[K");
}

// 16 hex digits from std::random_device (getrandom): unique per run for all practical purposes.
std::string new_session_id() {
  std::random_device rd;
  uint64_t v = (uint64_t(rd()) << 32) ^ rd();
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

int run_record(const RecordOptions& o) {
  if (o.command.empty()) {
    fprintf(stderr, "cutrace record: no command given (usage: cutrace record -o DIR -- COMMAND ...)\n");
    return 2;
  }
  const std::string& t = o.gpu_timing;
  if (t != "auto" && t != "cupti" && t != "exact" && t != "end" && t != "events" && t != "none") {
    fprintf(stderr, "cutrace record: --gpu-timing must be auto, cupti, exact, end, events or none\n");
    return 2;
  }
  if (t == "exact" && !o.gpu_sample.empty()) {
    fprintf(stderr, "cutrace record: --gpu-timing exact times every operation; it does not take --gpu-sample\n");
    return 2;
  }
  double fraction = 1;
  int64_t period_ns = 0;
  if (!o.gpu_sample.empty() && !cutrace::parse_gpu_sample(o.gpu_sample.c_str(), &fraction, &period_ns)) {
    fprintf(stderr,
            "cutrace record: --gpu-sample must be FRACTION[/PERIOD_MS] with 0 < FRACTION <= 1 and "
            "10 <= PERIOD_MS <= 3600000, e.g. 0.2 or 0.2/500\n");
    return 2;
  }
  if (o.python_stacks != "none" && o.python_stacks != "sync" && o.python_stacks != "launch") {
    fprintf(stderr, "cutrace record: --python-stacks must be none, sync or launch\n");
    return 2;
  }
  if (o.backtrace != "none" && o.backtrace != "sync" && o.backtrace != "all") {
    fprintf(stderr, "cutrace record: --backtrace must be none, sync or all\n");
    return 2;
  }
  std::string shim = find_shim();
  if (access(shim.c_str(), R_OK) != 0) {
    fprintf(stderr, "cutrace record: shim not found at %s (set CUTRACE_SHIM)\n", shim.c_str());
    return 2;
  }
  std::string out = absolute(o.out);
  if (!make_dirs(out)) {
    fprintf(stderr, "cutrace record: output directory %s cannot be created or written: %s\n", out.c_str(),
            strerror(errno));
    return 2;
  }
  std::set<std::string> before_names = list_traces(out);
  size_t before = before_names.size();
  std::string preload = shim;
  if (const char* p = getenv("LD_PRELOAD"); p && *p) preload += std::string(":") + p;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("CUTRACE_OUTPUT", out.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", shim.c_str(), 1);  // NVTX ranges reach the shim's bridge
  setenv("CUTRACE_GPU_TIMING", o.gpu_timing.c_str(), 1);
  if (!o.gpu_sample.empty()) setenv("CUTRACE_GPU_SAMPLE", o.gpu_sample.c_str(), 1);
  setenv("CUTRACE_SAMPLE_HZ", std::to_string(o.sample_hz).c_str(), 1);
  setenv("CUTRACE_BACKTRACE", o.backtrace.c_str(), 1);
  if (!o.cpu_counters.empty()) setenv("CUTRACE_CPU_COUNTERS", o.cpu_counters.c_str(), 1);
  setenv("CUTRACE_PYTHON_STACKS", o.python_stacks.c_str(), 1);
  if (o.verbose) setenv("CUTRACE_VERBOSE", "1", 1);
  if (o.buffer_mb > 0) setenv("CUTRACE_BUFFER_MB", std::to_string(int64_t(o.buffer_mb)).c_str(), 1);
  if (o.hang_timeout_given) {
    char hang[32];
    snprintf(hang, sizeof hang, "%g", o.hang_timeout);
    setenv("CUTRACE_HANG_TIMEOUT", hang, 1);
  }
  // --capture-range=nvtx:PATTERN is shorthand for nvtx + CUTRACE_CAPTURE_NVTX=PATTERN.
  std::string range = o.capture_range, pattern;
  if (range.rfind("nvtx:", 0) == 0) pattern = range.substr(5), range = "nvtx";
  const bool flight = range.rfind("flight:", 0) == 0;  // passed on whole: the shim parses SECONDS
  if (flight) {
    char* end = nullptr;
    double s = strtod(range.c_str() + 7, &end);
    if (end == range.c_str() + 7 || *end || !(s > 0 && s <= 86400)) {
      fprintf(stderr, "cutrace record: --capture-range flight:SECONDS needs 0 < SECONDS <= 86400\n");
      return 2;
    }
  }
  if (!flight && range != "process" && range != "cudaProfilerApi" && range != "nvtx" && range != "manual") {
    fprintf(stderr,
            "cutrace record: --capture-range must be process, cudaProfilerApi, nvtx[:PATTERN], manual or "
            "flight:SECONDS\n");
    return 2;
  }
  if (!o.capture_steps.empty() && range != "nvtx") {
    fprintf(stderr, "cutrace record: --capture-steps A-B counts NVTX ranges: it needs --capture-range nvtx:PATTERN\n");
    return 2;
  }
  // Only a range the user chose: without one, the smprof API may take the windows over (shim).
  if (o.capture_range_given) setenv("CUTRACE_CAPTURE_RANGE", range.c_str(), 1);
  else unsetenv("CUTRACE_CAPTURE_RANGE");
  if (!pattern.empty()) setenv("CUTRACE_CAPTURE_NVTX", pattern.c_str(), 1);
  if (!o.capture_steps.empty()) setenv("CUTRACE_CAPTURE_STEPS", o.capture_steps.c_str(), 1);
  if (o.capture_repeat > 0) {
    if (o.capture_steps.empty()) {
      fprintf(stderr, "cutrace record: --capture-repeat needs --capture-steps A-B\n");
      return 2;
    }
    setenv("CUTRACE_CAPTURE_REPEAT", std::to_string(o.capture_repeat).c_str(), 1);
  }
  if (o.delay > 0) setenv("CUTRACE_DELAY", std::to_string(o.delay).c_str(), 1);
  if (o.duration > 0) setenv("CUTRACE_DURATION", std::to_string(o.duration).c_str(), 1);
  // Every process of this run writes the id in its trace (Meta "session"), so that the tools can
  // tell this run's traces from those of another run in the same directory (tools/analysis/runs.h). An id
  // already set (cutrace record under cutrace record) is kept: the run is the outer one.
  if (const char* s = getenv("CUTRACE_SESSION"); !s || !*s) setenv("CUTRACE_SESSION", new_session_id().c_str(), 1);

  g_child = fork();
  if (g_child < 0) {
    perror("cutrace record: fork");
    return 2;
  }
  if (g_child == 0) {
    std::vector<char*> argv;
    for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    fprintf(stderr, "cutrace record: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, forward_signal);
  int status = 0;
  if (!o.quiet && isatty(STDERR_FILENO)) {
    wait_with_status_line(out, &status);
  } else {
    while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {}
  }
  size_t written = count_new_traces(out, before_names);
  fprintf(stderr, "cutrace: %zu trace file%s written to %s\n", written, written == 1 ? "" : "s", out.c_str());
  print_losses(out, before_names);
  if (before > 0 && written > 0)
    fprintf(stderr,
            "cutrace: %s also holds %zu trace file%s of earlier runs: the tools read a directory's files as "
            "one job (they note traces of separate runs); use a directory per run\n",
            out.c_str(), before, before == 1 ? "" : "s");
  // With windows, a process writes a file only once one opened in it (collector.cpp, finish).
  if (written == 0 && ((range != "process" && !flight) || o.delay > 0)) {
    std::string how = "--capture-range " + o.capture_range;
    if (o.delay > 0) {
      char d[48];
      snprintf(d, sizeof d, ", --delay %g", o.delay);
      how += d;
    }
    fprintf(stderr, "cutrace: no capture window opened in any process (%s)\n", how.c_str());
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

void add_record_command(CLI::App& app) {
  auto opts = std::make_shared<RecordOptions>();
  CLI::App* sub = app.add_subcommand("record", "Run a command and trace every CUDA process it starts");
  sub->add_option("-o,--output", opts->out, "Directory for the trace files (created if missing)");
  sub->add_option("--gpu-timing", opts->gpu_timing,
                  "auto (default): cupti where libcupti loads, else end; cupti: CUPTI activity records "
                  "(the kernels' own timestamps); exact: cupti for every operation, start and end events "
                  "where CUPTI cannot load; end: one completion event per GPU op, start inferred; events: "
                  "start and end events (a few us too long per op); none: CPU side only");
  sub->add_option("--gpu-sample", opts->gpu_sample,
                  "FRACTION[/PERIOD_MS]: take GPU times only in one window of FRACTION x PERIOD (default "
                  "200 ms) at a random place in each PERIOD, to cut the timing cost on launch-bound jobs; "
                  "every call is still recorded, untimed ones are flagged not_sampled");
  sub->add_option("--backtrace", opts->backtrace,
                  "Native call stacks: sync: of synchronisations and blocking copies (default); all: also of "
                  "every launch and async copy; none");
  sub->add_option("--python-stacks", opts->python_stacks,
                  "Python call stacks (CPython 3.10-3.13, read without the GIL): sync: with the native stacks of "
                  "synchronisations and blocking copies (default), and of every launch under --backtrace all; "
                  "launch: also of every launch, copy and memset; none");
  sub->add_option("--sample-hz", opts->sample_hz, "CPU/GPU utilisation sampling rate (0 = off)")
      ->check(CLI::Range(0, 1000));
  sub->add_option("--cpu-counters", opts->cpu_counters,
                  "CPU performance counters read at --sample-hz besides the software ones (task-clock, "
                  "context-switches, cpu-migrations, page-faults): perf names (cycles, instructions, "
                  "cache-misses, branch-misses, itlb-misses, dtlb-misses, ...), rHEX raw codes or events "
                  "listed in /sys/bus/event_source/devices/*/events (PMU/NAME); none: software only; off: "
                  "no counters. Default: cycles,instructions,cache-misses,branch-misses,itlb-misses,dtlb-misses")
      ->check([](const std::string& v) {
        if (v.empty() || v.front() == ',' || v.back() == ',' || v.find(",,") != std::string::npos)
          return std::string("a comma-separated list of counter names");
        return std::string();
      });
  sub->add_flag("-v,--verbose", opts->verbose, "Shim prints what it records to stderr");
  sub->add_flag("-q,--quiet", opts->quiet,
                "No live status line (shown once a second while stderr is a terminal: processes, records, "
                "GPU ops in flight, drops, output size)");
  sub->add_option("--buffer-mb", opts->buffer_mb,
                  "Most memory (MB) each process's records may take while they wait to be written "
                  "(default 256); past it records are dropped, counted and marked in the trace")
      ->check(CLI::Range(1.0, 1048576.0));
  sub->add_option("--hang-timeout", opts->hang_timeout,
                  "Seconds a GPU operation may stay incomplete, or a thread blocked in a synchronisation, "
                  "before a hang report is written (stderr, DIR/hang.<host>.rank<N>.txt, the trace); "
                  "default 300, 0 = off. The job goes on")
      ->check(CLI::Range(0.0, 1e7))
      ->each([opts](const std::string&) { opts->hang_timeout_given = true; });
  sub->add_option("--capture-range", opts->capture_range,
                  "What opens capture windows: process (default), cudaProfilerApi, nvtx:PATTERN (NVTX "
                  "ranges whose name matches the glob), manual (cutrace start/stop PID, cutrace.start()), "
                  "flight:SECONDS (keep the last SECONDS in memory, write them on a hang, SIGUSR2, cutrace "
                  "snapshot PID or an abnormal end)")
      ->each([opts](const std::string&) { opts->capture_range_given = true; });
  sub->add_option("--capture-steps", opts->capture_steps,
                  "With nvtx:PATTERN, capture the A-th to B-th matching ranges (0-based), e.g. 100-120");
  sub->add_option("--capture-repeat", opts->capture_repeat,
                  "With --capture-steps A-B: capture A-B again every N matching ranges (A+N..B+N, ...), "
                  "e.g. --capture-steps 100-109 --capture-repeat 1000")
      ->check(CLI::PositiveNumber);
  sub->add_option("--delay", opts->delay, "Start capturing this many seconds after the first CUDA use");
  sub->add_option("--duration", opts->duration, "Stop each capture window after this many seconds");
  sub->add_option("command", opts->command, "The command to run (after --)")->required();
  sub->positionals_at_end();
  sub->callback([opts] {
    int rc = run_record(*opts);
    throw CLI::RuntimeError(rc);
  });
}
