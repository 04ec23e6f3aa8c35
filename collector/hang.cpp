// The hang watchdog (CUTRACE_HANG_TIMEOUT), on the collector thread: a GPU operation incomplete,
// or a thread blocked in a synchronisation, longer than the timeout gets a report (stderr,
// DIR/hang.<host>.rank<N>.txt, Hang/HangItem records). It reads what the collector already has:
// the op resolver's queues (each stream's front op is the one the stream waits on) and the sync
// state the wrappers publish before calling the driver (thread_state.h). The application's
// threads do nothing more for it. One report at a time: the next one waits until every item of
// the last has completed (a HangEnd record).
#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "collector/collector_impl.h"
#include "runtime/api_names.h"

namespace cutrace {

namespace {
constexpr size_t kOpsListed = 16;  // per stream, in the text (the records keep as many)
constexpr int kFramesListed = 8;

std::string secs(int64_t ns) {
  char b[32];
  snprintf(b, sizeof b, "%.1f s", double(ns) / 1e9);
  return b;
}

// A thread's sync state as its wrapper published it: valid when the thread is in a Sync call
// that the collector has not read the record of (the same test as open_sync at exit).
struct Blocked {
  ThreadState* s;
  uint64_t t0;
};
bool blocked_in_sync(ThreadState* s, uint64_t* t0) {
  uint64_t a = s->sync_t0.load(std::memory_order_relaxed);
  if (s->busy.load(std::memory_order_acquire) != uint8_t(RawKind::Sync)) return false;
  uint64_t b = s->sync_t0.load(std::memory_order_relaxed);
  if (!a || a != b || (s->seq && int64_t(a - s->last_t0) <= 0)) return false;
  *t0 = a;
  return true;
}

const char* op_word(trace::RecType t) {
  return t == trace::RecType::Kernel ? "kernel" : t == trace::RecType::Memcpy ? "memcpy" : "memset";
}

// "function+0x1a (module)" per frame, from the raw PCs: dladdr (exported symbols; a program
// linked without -rdynamic shows module+offset). `cutrace hang` symbolises the trace's stacks fully.
std::vector<std::string> frame_lines(const std::vector<uint64_t>& pcs) {
  std::vector<std::string> out;
  for (uint64_t pc : pcs) {
    if (int(out.size()) >= kFramesListed) break;
    Dl_info info{};
    char b[512];
    if (dladdr(reinterpret_cast<void*>(pc - 1), &info) && info.dli_fname) {
      const char* mod = strrchr(info.dli_fname, '/');
      mod = mod ? mod + 1 : info.dli_fname;
      if (info.dli_sname)
        snprintf(b, sizeof b, "%s+0x%" PRIx64 " (%s)", demangle(info.dli_sname).c_str(), pc - uint64_t(info.dli_saddr),
                 mod);
      else snprintf(b, sizeof b, "%s+0x%" PRIx64, mod, pc - uint64_t(info.dli_fbase));
    } else {
      snprintf(b, sizeof b, "0x%" PRIx64, pc);
    }
    out.push_back(b);
  }
  return out;
}
}  // namespace

void Collector::watch_hangs(int64_t now) {
  if (hang_open_) {
    if (hang_over()) {
      trace::HangEndRec e{};
      e.ts = now, e.stuck_ns = now - hang_since_, e.hang = hangs_;
      w_.add(e, trace::RecType::HangEnd);
      w_.flush();
      hang_open_ = false;
      hang_text("cutrace: hang #" + std::to_string(hangs_) + " of rank " + std::to_string(live_.rank) + " (pid " +
                std::to_string(live_.pid) + ") is over: the reported work completed after " + secs(now - hang_since_) +
                "\n");
    }
    return;
  }
  int64_t oldest = 0;  // start of the longest-stuck item
  ops_.each_stream(
      [&](uint32_t, const std::deque<PendingOp>& q, int64_t last_end, const std::vector<OpResolver::Unconfirmed>& u) {
        if (q.empty() && u.empty()) return;
        int64_t launched = !u.empty() ? u.front().rec.kernel.op.cpu_end : q.front().op().cpu_end;  // packed: a copy
        int64_t since = std::max(launched, last_end);
        if (now - since > hang_timeout_ns_ && (!oldest || since < oldest)) oldest = since;
      });
  for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire)) {
    uint64_t t0 = 0;
    if (!blocked_in_sync(s, &t0)) continue;
    int64_t since = clock_.to_ns(t0);
    if (now - since > hang_timeout_ns_ && (!oldest || since < oldest)) oldest = since;
  }
  if (oldest) report_hang(now, oldest);
}

bool Collector::hang_over() {
  for (auto& [sid, seq] : hang_ops_) {
    bool pending = false;
    ops_.each_stream([&, sid = sid, seq = seq](uint32_t id, const std::deque<PendingOp>& q, int64_t,
                                               const std::vector<OpResolver::Unconfirmed>& u) {
      if (id == sid)
        pending = std::any_of(u.begin(), u.end(), [&](const OpResolver::Unconfirmed& x) { return x.seq == seq; }) ||
                  std::any_of(q.begin(), q.end(), [&](const PendingOp& op) { return op.seq == seq; });
    });
    if (pending) return false;
  }
  for (auto& [index, t0] : hang_threads_)
    for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire)) {
      uint64_t now_t0 = 0;
      if (s->index == index && blocked_in_sync(s, &now_t0) && now_t0 == t0) return false;
    }
  return true;
}

void Collector::hang_text(const std::string& text) {
  for (size_t off = 0; off < text.size();) {  // stderr: whatever the app did with stdio
    ssize_t n = write(2, text.data() + off, text.size() - off);
    if (n <= 0) break;
    off += size_t(n);
  }
  int fd = open(hang_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    log_warn("cannot write the hang report %s: %s", hang_path_.c_str(), strerror(errno));
    return;
  }
  ssize_t n = write(fd, text.data(), text.size());
  if (n != ssize_t(text.size())) log_warn("hang report %s: short write", hang_path_.c_str());
  close(fd);
}

void Collector::report_hang(int64_t now, int64_t since) {
  ++hangs_;
  hang_open_ = true, hang_since_ = since;
  hang_ops_.clear(), hang_threads_.clear();
  int64_t mono = 0, real = 0;
  clock_pair(&mono, &real);
  const int64_t to_real = real - mono;
  auto rel = [&](int64_t t) { return secs(t - started_ns_); };  // since recording began
  auto names = [&](const std::vector<uint32_t>& ids) {
    std::string s;
    for (uint32_t id : ids) s += (s.empty() ? "" : " > ") + std::string(w_.text(id));
    return s;
  };
  std::string out;
  char line[1024];
  {
    time_t t = time_t((since + to_real) / 1000000000);
    struct tm tm {};
    gmtime_r(&t, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(line, sizeof line,
             "cutrace: HANG #%u in rank %lld (pid %lld, host %s): work stuck for %s (--hang-timeout %s), since %s; "
             "the job goes on\n",
             hangs_, (long long)live_.rank, (long long)live_.pid, live_.host.c_str(), secs(now - since).c_str(),
             secs(hang_timeout_ns_).c_str(), when);
    out += line;
  }
  std::vector<trace::HangItemRec> items;
  auto item = [&](trace::HangItemKind k) {
    trace::HangItemRec r{};
    r.h = {uint16_t(trace::RecType::HangItem), uint16_t(sizeof r)};
    r.hang = hangs_, r.kind = uint8_t(k);
    return r;
  };
  uint32_t nops = 0;
  struct InFlight {
    uint64_t seq;
    uint32_t name_id, stream;
    int64_t launched;
  };
  std::vector<InFlight> coll_inflight;
  out += "  GPU operations launched and not complete, per stream:\n";
  // One listed operation: its text lines and its HangItem record.
  auto list_op = [&](uint32_t sid, trace::RecType type, const OpRecord& rec, uint64_t coll_seq, uint32_t stack,
                     const std::vector<OpenRange*>* ranges, const char* note) {
    const trace::OpCommon& c = rec.kernel.op;
    std::string name = type == trace::RecType::Kernel ? std::string(w_.text(rec.kernel.name_id)) : op_word(type);
    uint32_t name_id = type == trace::RecType::Kernel ? rec.kernel.name_id : w_.intern(name);
    std::string coll = coll_seq ? " [collective #" + std::to_string(coll_seq) + "]" : "";
    snprintf(line, sizeof line, "      %s %s%s: launched at +%s (%s ago) by tid %u, corr %" PRIu64 "%s\n",
             op_word(type), name.c_str(), coll.c_str(), rel(c.cpu_begin).c_str(), secs(now - c.cpu_begin).c_str(),
             c.tid, uint64_t(c.corr), note);
    out += line;
    if (ranges && !ranges->empty()) {
      std::vector<uint32_t> ids;
      for (const OpenRange* r : *ranges) ids.push_back(r->rec.name_id);
      out += "        in ranges: " + names(ids) + "\n";
    }
    if (stack) {
      std::vector<std::string> frames = frame_lines(stacks_.raw_pcs(stack));
      for (size_t i = 0; i < frames.size(); ++i)
        out += std::string(i ? "           " : "        at ") + frames[i] + "\n";
    } else {
      out += "        (no call stack: launches have one with --backtrace all)\n";
    }
    trace::HangItemRec r = item(trace::HangItemKind::Op);
    r.begin = c.cpu_begin, r.end = c.cpu_end, r.corr = c.corr, r.seq = coll_seq, r.tid = c.tid;
    r.stream = sid, r.name_id = name_id, r.stack = stack, r.op_type = uint16_t(type), r.device = c.device;
    items.push_back(r);
  };
  ops_.each_stream([&](uint32_t sid, const std::deque<PendingOp>& q, int64_t last_end,
                       const std::vector<OpResolver::Unconfirmed>& u) {
    if (q.empty() && u.empty()) return;
    const int64_t first_end = !u.empty() ? u.front().rec.kernel.op.cpu_end : q.front().op().cpu_end;
    const int64_t waits = now - std::max(first_end, last_end);
    const size_t n = q.size() + u.size();
    snprintf(line, sizeof line, "    stream %u (device %u): %zu op%s; the first has not completed for %s%s\n", sid,
             unsigned(!u.empty() ? u.front().rec.kernel.op.device : q.front().op().device), n, n == 1 ? "" : "s",
             secs(waits).c_str(), waits > hang_timeout_ns_ ? " (stuck)" : "");
    out += line;
    nops += uint32_t(n);
    for (const OpResolver::Unconfirmed& x : u) {  // written without GPU time, before the queue's
      if (waits > hang_timeout_ns_ && &x == &u.front()) hang_ops_.push_back({sid, x.seq});
      if (x.coll_seq) coll_inflight.push_back({x.coll_seq, x.rec.kernel.name_id, sid, x.rec.kernel.op.cpu_begin});
      list_op(sid, x.type, x.rec, x.coll_seq, x.stack, nullptr, " (its CUPTI record never came: it may be complete)");
    }
    size_t k = u.size();
    for (const PendingOp& op : q) {
      if (op.coll_seq) coll_inflight.push_back({op.coll_seq, op.rec.kernel.name_id, sid, op.op().cpu_begin});
      if (waits > hang_timeout_ns_ && u.empty() && &op == &q.front()) hang_ops_.push_back({sid, op.seq});
      if (k++ >= kOpsListed) continue;
      list_op(sid, op.type, op.rec, op.coll_seq, op.stack, &op.ranges, "");
    }
    if (k > kOpsListed) out += "      ... and " + std::to_string(k - kOpsListed) + " more\n";
  });
  if (!nops) out += "    none\n";
  out += "  threads blocked in a synchronisation:\n";
  uint32_t nthreads = 0;
  for (ThreadState* s = registry_head(); s; s = s->next.load(std::memory_order_acquire)) {
    uint64_t t0 = 0;
    if (!blocked_in_sync(s, &t0)) continue;
    ++nthreads;
    const int64_t begin = clock_.to_ns(t0);
    if (now - begin > hang_timeout_ns_) hang_threads_.push_back({s->index, t0});
    uint32_t what = s->sync_what.load(std::memory_order_relaxed);
    uint64_t handle = s->sync_handle.load(std::memory_order_relaxed);
    auto kind = trace::SyncKind(what & 0xff);
    trace::HangItemRec r = item(trace::HangItemKind::Thread);
    r.begin = begin, r.tid = s->tid, r.op_type = uint16_t(trace::RecType::Sync), r.sync_kind = uint8_t(kind);
    auto dev = ctx_device_.find(s->rd_ctx);
    r.device = dev != ctx_device_.end() ? dev->second : 0;
    const char* api = api_name(uint16_t(what >> 16));
    r.name_id = w_.intern(api);
    std::string on;
    if (kind == trace::SyncKind::Stream) {
      r.stream = ops_.stream_id(reinterpret_cast<CUstream>(handle), s->rd_ctx, s->tid, (what >> 8) & 1, r.device);
      on = " on stream " + std::to_string(r.stream);
    } else if (kind == trace::SyncKind::Event) {
      r.event = handle;
      snprintf(line, sizeof line, " on event 0x%" PRIx64, handle);
      on = line;
    } else if (kind == trace::SyncKind::Context) {
      on = " (whole context, device " + std::to_string(r.device) + ")";
    }
    snprintf(line, sizeof line, "    tid %u: %s%s, since +%s (%s)\n", s->tid, api, on.c_str(), rel(begin).c_str(),
             secs(now - begin).c_str());
    out += line;
    std::vector<uint32_t> open = ranges_.open_on(s->tid);
    if (!open.empty()) out += "      in ranges: " + names(open) + "\n";
    items.push_back(r);
  }
  if (!nthreads) out += "    none\n";
  const auto& done = ops_.done_collectives();
  snprintf(line, sizeof line, "  collectives (NCCL kernels): %" PRIu64 " launched, %" PRIu64 " complete\n",
           collectives_launched_, ops_.collectives_done());
  out += line;
  std::sort(coll_inflight.begin(), coll_inflight.end(),
            [](const InFlight& a, const InFlight& b) { return a.seq < b.seq; });
  for (const InFlight& f : coll_inflight) {
    snprintf(line, sizeof line, "    in flight: #%" PRIu64 " %s on stream %u, launched %s ago\n", f.seq,
             std::string(w_.text(f.name_id)).c_str(), f.stream, secs(now - f.launched).c_str());
    out += line;
  }
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    snprintf(line, sizeof line, "    completed: #%" PRIu64 " %s on stream %u, ended %s ago\n", it->seq,
             std::string(w_.text(it->name_id)).c_str(), it->stream,
             it->end ? secs(now - it->end).c_str() : "(no GPU time)");
    out += line;
    trace::HangItemRec r = item(trace::HangItemKind::CollectiveDone);
    r.begin = it->start, r.end = it->end, r.corr = it->corr, r.seq = it->seq, r.tid = it->tid, r.stream = it->stream;
    r.name_id = it->name_id, r.op_type = uint16_t(trace::RecType::Kernel), r.device = it->device;
    items.push_back(r);
  }
  out += "  report: " + hang_path_ + " (cutrace hang DIR compares the ranks)\n";
  trace::HangRec h{};
  h.ts = now, h.since = since, h.timeout_ns = hang_timeout_ns_, h.hang = hangs_, h.ops = nops, h.threads = nthreads;
  h.report_id = w_.intern(hang_path_);
  h.collectives_launched = collectives_launched_, h.collectives_done = ops_.collectives_done();
  w_.add(h, trace::RecType::Hang);
  for (trace::HangItemRec& r : items) w_.append(&r);
  w_.flush();  // readable while the job hangs
  hang_text(out);
  if (w_.flight()) flight_snapshot("hang");
}

}  // namespace cutrace
