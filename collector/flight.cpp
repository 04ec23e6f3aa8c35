// The flight recorder (--capture-range flight:SECONDS): capture runs as in process mode; the
// TraceWriter keeps the definitions and a ring of the last SECONDS of blocks, and these write
// them to the file on a trigger: SIGUSR2, `cutrace snapshot PID` (the control file), a hang
// report, a fatal signal or a non-zero exit status.
#include <signal.h>
#include <atomic>
#include <cstdio>
#include <string>
#include "collector/collector_impl.h"

namespace cutrace {
namespace {

std::atomic<int> g_flight_requests{0};  // SIGUSR2s not yet served (async-signal-safe counter)

void on_sigusr2(int) { g_flight_requests.fetch_add(1, std::memory_order_relaxed); }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

}  // namespace

// Only where SIGUSR2 has its default action (which would kill the process): an application's
// own handler is left alone, and then SIGUSR2 is not a trigger.
void Collector::flight_start() {
  char v[32];
  snprintf(v, sizeof v, "%g", config().flight_s);
  w_.meta("flight_seconds", v);
  w_.meta("flight_budget_bytes", std::to_string(config().buffer_mb << 20));
  struct sigaction old {};
  if (sigaction(SIGUSR2, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) {
    log_warn("SIGUSR2 has a handler already: it does not trigger flight snapshots (cutrace snapshot PID does)");
    return;
  }
  struct sigaction sa {};
  sa.sa_handler = on_sigusr2;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &sa, nullptr);
}

void Collector::flight_poll(int64_t now) {
  if (now - last_flight_flush_ >= kFlightFlushNs) {
    w_.flush();  // into the ring: its span is cut at these block edges
    last_flight_flush_ = now;
  }
  if (g_flight_requests.exchange(0, std::memory_order_relaxed) > 0) flight_snapshot("SIGUSR2");
}

void Collector::flight_snapshot(const char* trigger) {
  drain();
  uint32_t before = w_.snapshots();
  int64_t begin = w_.snapshot(trigger);
  if (w_.snapshots() == before) return;  // the writer failed earlier: nothing more is written
  w_.flush();
  log_info("flight snapshot %u (%s): the last %.1f s written to %s", before, trigger, double(mono_ns() - begin) / 1e9,
           path_.c_str());
}

// A normal exit (status 0, or an exec) writes no snapshot: the file keeps only the definitions.
void Collector::flight_at_end(int sig, int exit_status) {
  if (sig > 0) {
    flight_snapshot(signal_name(sig));
  } else if (exit_status > 0) {
    std::string why = "exit " + std::to_string(exit_status);
    flight_snapshot(why.c_str());
  }
}

}  // namespace cutrace
