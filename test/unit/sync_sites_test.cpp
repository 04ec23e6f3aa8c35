// Sync call sites in the summary and call stacks in the Chrome export, on synthetic traces whose
// Stack records point into this test binary (so that the frames symbolise to the functions
// below). The collector's StackInterner writes the Module and Stack records.
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "collector/stacks.h"
#include "test/unit/export_fixture.h"
#include "tools/analysis/summary_model.h"
#include "tools/export/exports.h"
#include "trace/writer.h"

using namespace cutrace;

namespace sync_sites_test_ns {
__attribute__((noinline)) int site_one(int x) {
  volatile int v = x;
  for (int i = 0; i < 3; ++i) v = v * 7 + 1;
  return v;
}
__attribute__((noinline)) int site_two(int x) {
  volatile int v = x;
  for (int i = 0; i < 3; ++i) v = v * 9 + 4;
  return v;
}
}  // namespace sync_sites_test_ns

namespace {

enum Api : uint16_t { kStreamSync = 1, kCtxSync = 2, kDtoH = 3, kCopyAsync = 4, kEventQuery = 5, kLaunch = 6 };

uint64_t pc_in(int (*f)(int)) { return reinterpret_cast<uint64_t>(f) + 8; }

class Trace {
 public:
  explicit Trace(std::string* out) : in_(w_) {
    w_.open_memory(out);
    init();
  }
  explicit Trace(const std::string& path) : in_(w_) {
    std::string err;
    REQUIRE_MESSAGE(w_.open(path, &err), err);
    init();
  }
  // Interns a stack (innermost first) the way the collector does; returns its id.
  uint32_t stack(std::vector<int (*)(int)> fns) {
    std::vector<uint64_t> pcs;
    for (auto f : fns) pcs.push_back(pc_in(f));
    return in_.intern(pcs.data(), uint32_t(pcs.size()), [](uint64_t) { return false; });
  }
  void op_stack(uint64_t corr, uint32_t stack, trace::RecType type) {
    trace::OpStackRec o{};
    o.corr = corr, o.stack = stack, o.op_type = uint16_t(type);
    w_.add(o, trace::RecType::OpStack);
  }
  // A synchronisation of cpu_ns at time t; its stack (0 = none) goes first, as the collector does.
  uint64_t sync(trace::SyncKind kind, uint16_t api, int64_t t, int64_t cpu_ns, uint32_t stack) {
    uint64_t corr = ++corr_;
    if (stack) op_stack(corr, stack, trace::RecType::Sync);
    trace::SyncRec s{};
    s.cpu_begin = t, s.cpu_end = t + cpu_ns, s.kind = uint8_t(kind), s.api = api, s.corr = corr, s.tid = 7;
    w_.add(s, trace::RecType::Sync);
    return corr;
  }
  uint64_t next_corr() { return ++corr_; }
  void memcpy(uint64_t corr, uint16_t api, int64_t t, int64_t cpu_ns, uint16_t flags) {
    trace::MemcpyRec m{};
    m.op.corr = corr, m.op.cpu_begin = t, m.op.cpu_end = t + cpu_ns, m.op.api = api, m.op.flags = flags;
    m.op.stream = 1, m.op.tid = 7, m.op.gpu_start = t + 10, m.op.gpu_end = t + 20;
    m.copy_kind = uint8_t(trace::CopyKind::DtoH), m.bytes = 64;
    w_.add(m, trace::RecType::Memcpy);
  }
  void kernel(uint64_t corr, int64_t t) {
    trace::KernelRec k{};
    k.op.corr = corr, k.op.cpu_begin = t, k.op.cpu_end = t + 5, k.op.api = kLaunch, k.op.stream = 1, k.op.tid = 7;
    k.op.gpu_start = t + 10, k.op.gpu_end = t + 30, k.name_id = w_.intern("k");
    w_.add(k, trace::RecType::Kernel);
  }
  void close() { w_.close(0, trace::kEndClean); }

 private:
  void init() {
    w_.meta("pid", "4242");
    w_.meta("rank", "0");
    w_.meta("start_monotonic_ns", "1000");
    w_.api_name(kStreamSync, "cuStreamSynchronize");
    w_.api_name(kCtxSync, "cuCtxSynchronize");
    w_.api_name(kDtoH, "cuMemcpyDtoH");
    w_.api_name(kCopyAsync, "cuMemcpyDtoHAsync");
    w_.api_name(kEventQuery, "cuEventQuery");
    w_.api_name(kLaunch, "cuLaunchKernel");
    trace::StreamRec st{};
    st.stream = 1;
    w_.add(st, trace::RecType::Stream);
  }
  TraceWriter w_;
  StackInterner in_;
  uint64_t corr_ = 0;
};

SummaryModel summarise(const std::vector<const std::string*>& files, SummaryOptions o = {}) {
  SummaryModel m(o);
  int i = 0;
  for (const std::string* bytes : files) {
    TraceReader r;
    std::string err;
    REQUIRE(r.open_memory(*bytes, "f" + std::to_string(i++) + ".cutrace", &err));
    REQUIRE(m.add(r));
  }
  return m;
}

// File A: site_one and site_two (called from site_one's caller stand-in: site_two below site_one).
// File B: the same two stacks, interned in the other order (other ids).
void build(std::string* a, std::string* b) {
  using K = trace::SyncKind;
  using sync_sites_test_ns::site_one;
  using sync_sites_test_ns::site_two;
  {
    Trace t(a);
    uint32_t one = t.stack({site_one, site_two});
    uint32_t two = t.stack({site_two});
    t.sync(K::Stream, kStreamSync, 1000, 100, one);
    t.sync(K::Stream, kStreamSync, 2000, 300, one);
    t.sync(K::Context, kCtxSync, 3000, 50, two);
    t.sync(K::EventQuery, kEventQuery, 3500, 5, one);  // a query does not block: not a site
    uint64_t copy = t.next_corr();
    t.op_stack(copy, two, trace::RecType::Memcpy);  // a blocking copy: its record comes later
    uint64_t async = t.next_corr();
    t.op_stack(async, one, trace::RecType::Memcpy);  // an async copy (--backtrace all): not a site
    t.sync(K::Stream, kStreamSync, 4000, 70, 0);     // no stack
    t.memcpy(copy, kDtoH, 5000, 40, 0);
    t.memcpy(async, kCopyAsync, 6000, 3, trace::kOpAsync);
    t.close();
  }
  {
    Trace t(b);
    uint32_t two = t.stack({site_two});
    uint32_t one = t.stack({site_one, site_two});
    CHECK(two == 1);
    CHECK(one == 2);
    t.sync(K::Stream, kStreamSync, 1000, 200, one);
    t.close();
  }
}

}  // namespace

TEST_CASE("sync call sites: blocked time per symbolised stack, merged across files") {
  std::string a, b;
  build(&a, &b);
  SummaryModel m = summarise({&a, &b});
  std::vector<SyncSite> sites = m.sync_sites();
  REQUIRE(sites.size() == 2);
  const SyncSite& one = sites[0];
  const SyncSite& two = sites[1];
  // This binary has DWARF (-g): the label is the source line, then the function.
  CHECK(sync_site_label(one).rfind("sync_sites_test.cpp:", 0) == 0);
  CHECK(sync_site_label(one).find(" in sync_sites_test_ns::site_one(int)") != std::string::npos);
  CHECK(one.time.count == 3);
  CHECK(one.time.total_ns == 600);
  CHECK(one.time.max_ns == 300);
  CHECK(one.apis == std::map<std::string, uint64_t>{{"cuStreamSynchronize", 3}});
  REQUIRE(one.frames.size() == 2);
  CHECK(one.frames[1].function == "sync_sites_test_ns::site_two(int)");
  CHECK(sync_site_label(two).find(" in sync_sites_test_ns::site_two(int)") != std::string::npos);
  CHECK(two.time.count == 2);
  CHECK(two.time.total_ns == 90);
  CHECK(two.apis == std::map<std::string, uint64_t>{{"cuCtxSynchronize", 1}, {"cuMemcpyDtoH", 1}});
  CHECK(m.sync_unattributed().count == 1);
  CHECK(m.sync_unattributed().total_ns == 70);

  auto j = m.to_json()["sync_call_sites"];
  CHECK(j["distinct"] == 2);
  CHECK(j["with_stack"]["count"] == 5);
  CHECK(j["without_stack"]["total_ns"] == 70);
  REQUIRE(j["sites"].size() == 2);
  CHECK(j["sites"][0]["site"] == sync_site_label(one));
  CHECK(j["sites"][0]["mean_ns"] == 200);
  CHECK(j["sites"][0]["frames"][0]["function"] == "sync_sites_test_ns::site_one(int)");
  CHECK(j["sites"][0]["frames"][0]["offset"].get<uint64_t>() > 0);
  CHECK(j["symbol_problems"].empty());
}

TEST_CASE("sync call sites follow the time filter") {
  std::string a, b;
  build(&a, &b);
  SummaryOptions o;
  o.from_ns = 1500;  // drops the first sync of each file
  SummaryModel m = summarise({&a, &b}, o);
  std::vector<SyncSite> sites = m.sync_sites();
  REQUIRE(sites.size() == 2);
  CHECK(sites[0].time.count == 1);  // site_one: only file A's second stream sync
  CHECK(sites[0].time.total_ns == 300);
  CHECK(sites[1].time.total_ns == 90);
}

TEST_CASE("chrome export: host events carry their call stack in args.backtrace") {
  export_fixture::TempDir dir;
  std::string path = dir.path + "/t.rank0.pid4242.cutrace";
  {
    Trace t(path);
    uint32_t one = t.stack({sync_sites_test_ns::site_one, sync_sites_test_ns::site_two});
    uint64_t launch = t.next_corr();
    t.op_stack(launch, one, trace::RecType::Kernel);
    t.sync(trace::SyncKind::Stream, kStreamSync, 2000, 100, one);
    t.sync(trace::SyncKind::Stream, kStreamSync, 3000, 100, 0);
    t.kernel(launch, 1500);
    t.close();
  }
  std::string err;
  REQUIRE_MESSAGE(export_chrome({path}, export_fixture::alignment_of({{path, 0}}), dir.path + "/out.json", &err), err);
  nlohmann::json doc = nlohmann::json::parse(export_fixture::read_file(dir.path + "/out.json"));
  std::vector<nlohmann::json> syncs, launches;
  for (const auto& ev : doc["traceEvents"]) {
    // Host events: the runtime names Kineto writes (tools/export/kineto.h).
    if (ev.value("cat", "") == "cuda_runtime" && ev.value("name", "") == "cudaStreamSynchronize") syncs.push_back(ev);
    if (ev.value("cat", "") == "cuda_runtime" && ev.value("name", "") == "cudaLaunchKernel") launches.push_back(ev);
  }
  REQUIRE(syncs.size() == 2);
  REQUIRE(syncs[0]["args"].contains("backtrace"));
  auto bt = syncs[0]["args"]["backtrace"];
  REQUIRE(bt.size() == 2);
  CHECK(bt[0].get<std::string>().find(" in sync_sites_test_ns::site_one(int) (") != std::string::npos);
  CHECK(bt[1].get<std::string>().find(" in sync_sites_test_ns::site_two(int) (") != std::string::npos);
  CHECK(!syncs[1]["args"].contains("backtrace"));
  REQUIRE(launches.size() == 1);
  CHECK(launches[0]["args"]["backtrace"] == bt);
}
