// The Chrome export in the shape Holistic Trace Analysis reads (Kineto's torch.profiler trace),
// checked rule by rule on a 2-rank DDP-like job, so that CI guards what HTA relies on without HTA:
// which events are GPU events (stream/device args), how CPU and GPU events correlate, runtime
// names and CUPTI cbids, user annotations on the stream tids, GPU-side sync events naming the
// cuEventRecord they wait on, NCCL and occupancy args, distributedInfo, nesting per track, flows.
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "test/unit/export_fixture.h"
#include "tools/export/common.h"
#include "tools/export/exports.h"
#include "tools/export/kineto.h"
#include "tools/export/plan.h"
#include "trace/format.h"
#include "trace/writer.h"

using namespace cutrace;
using export_fixture::read_file;
using export_fixture::TempDir;
using nlohmann::json;

namespace {

enum Api : uint16_t { kLaunch = 1, kCopy, kSet, kStreamSync, kCtxSync, kRecord, kWait, kAlloc, kLaunchEx };
constexpr uint32_t kCompute = 1, kNccl = 2;  // stream ids
const char* const kAllReduce = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";

// One rank of a data-parallel job, 3 steps "ProfilerStep#N" on the main thread, each:
//   HtoD copy; "forward": 3 gemm kernels (264 blocks of 256 threads, 32 registers: 2 blocks per
//   SM on 132 SMs, 25% estimated occupancy on cc 9.0); "backward": 2 kernels with, between them,
//   cuEventRecord on the compute stream, cuStreamWaitEvent of the NCCL stream on it, the
//   all-reduce on the NCCL stream (overlapping the second backward kernel), cuEventRecord on the
//   NCCL stream, and cuStreamWaitEvent of the compute stream on it; "optimizer": a memset and
//   "adam"; cuStreamSynchronize. A second thread ("loader") copies on the compute stream outside
//   any range. Step 2's first forward kernel takes no time and the next starts at the same ns;
//   step 3's cuEventRecord starts 18 ns before the launch before it returned.
struct Rank {
  TraceWriter w;
  uint32_t pid;
  uint16_t device;
  uint64_t corr = 0, range_id = 0;
  int64_t t;         // host clock
  int64_t gpu[3]{};  // per stream: when its last work ends
  uint64_t event = 0xe000;
  bool range_ids = true;  // false: every range has id 0, as traces of older writers have

  Rank(const std::string& path, int rank, int world) : pid(100 + rank), device(uint16_t(rank)) {
    std::string err;
    REQUIRE_MESSAGE(w.open(path, &err), err);
    t = 1'000'000'000 + rank * 1'000;
    w.meta("host", "node-0");
    w.meta("pid", std::to_string(pid));
    w.meta("rank", std::to_string(rank));
    w.meta("world_size", std::to_string(world));
    w.meta("cmdline", "/usr/bin/python3 train_ddp.py");
    w.meta("start_monotonic_ns", std::to_string(t));
    trace::ClockSyncRec c{};
    c.monotonic_ns = t;
    c.realtime_ns = t + 1'700'000'000'000'000'000;
    w.add(c, trace::RecType::ClockSync);
    const std::pair<Api, const char*> apis[] = {
        {kLaunch, "cuLaunchKernel"},          {kCopy, "cuMemcpyHtoDAsync"},   {kSet, "cuMemsetD32Async"},
        {kStreamSync, "cuStreamSynchronize"}, {kCtxSync, "cuCtxSynchronize"}, {kRecord, "cuEventRecord"},
        {kWait, "cuStreamWaitEvent"},         {kAlloc, "cuMemAlloc"},         {kLaunchEx, "cuLaunchKernelEx"}};
    for (const auto& [id, name] : apis) w.api_name(id, name);
    trace::DeviceRec d{};
    d.device = device;
    d.name_id = w.intern("NVIDIA H200");
    d.cc_major = 9;
    d.sm_count = 132;
    d.total_mem = 150109880320ull;
    w.add(d, trace::RecType::Device);
    for (auto [tid, name] : {std::pair<uint32_t, const char*>{pid, "trainer"}, {pid + 1, "loader"}}) {
      trace::ThreadRec th{};
      th.tid = tid;
      th.name_id = w.intern(name);
      w.add(th, trace::RecType::Thread);
    }
    for (uint32_t s : {kCompute, kNccl}) {
      trace::StreamRec sr{};
      sr.stream = s;
      sr.device = device;
      w.add(sr, trace::RecType::Stream);
    }
  }

  void op(trace::OpCommon& o, uint16_t api, uint32_t stream, int64_t gpu_ns, uint32_t tid, int64_t gap = 2000) {
    o.corr = ++corr;
    o.cpu_begin = t;
    o.cpu_end = t + 3000;
    t += 3500;
    o.gpu_start = std::max(o.cpu_end + gap, gpu[stream]);
    o.gpu_end = o.gpu_start + gpu_ns;
    gpu[stream] = o.gpu_end;
    o.tid = tid ? tid : pid;
    o.stream = stream;
    o.device = device;
    o.api = api;
  }
  uint64_t kernel(const char* name, uint32_t stream, int64_t gpu_ns, uint16_t api = kLaunch, uint32_t tid = 0) {
    trace::KernelRec k{};
    op(k.op, api, stream, gpu_ns, tid);
    k.name_id = w.intern(name);
    k.grid[0] = 264, k.grid[1] = k.grid[2] = 1;
    k.block[0] = 256, k.block[1] = k.block[2] = 1;
    k.regs = 32;
    w.add(k, trace::RecType::Kernel);
    return k.op.corr;
  }
  void copy(uint32_t tid) {
    trace::MemcpyRec m{};
    op(m.op, kCopy, kCompute, 4000, tid);
    m.bytes = 1 << 20;
    m.copy_kind = uint8_t(trace::CopyKind::HtoD);
    m.src_kind = uint8_t(trace::MemKind::Pinned);
    m.dst_kind = uint8_t(trace::MemKind::Device);
    m.op.flags = trace::kOpAsync;
    w.add(m, trace::RecType::Memcpy);
  }
  void set() {
    trace::MemsetRec m{};
    op(m.op, kSet, kCompute, 1000, 0);
    m.bytes = 4096;
    m.element_size = 4;
    w.add(m, trace::RecType::Memset);
  }
  uint64_t record(uint32_t stream, int64_t early = 0) {
    trace::ApiRec a{};
    a.cpu_begin = t - early;
    a.cpu_end = t + 500;
    t += 1000;
    a.corr = ++corr;
    a.arg = ++event;
    a.tid = pid;
    a.stream = stream;
    a.api = kRecord;
    a.device = device;
    w.add(a, trace::RecType::Api);
    return a.corr;
  }
  void sync(trace::SyncKind kind, uint16_t api, uint32_t stream, uint64_t ev, int64_t dur) {
    trace::SyncRec s{};
    s.cpu_begin = t;
    s.cpu_end = t + dur;
    t += dur + 500;
    s.event = ev;
    s.tid = pid;
    s.stream = stream;
    s.device = device;
    s.api = api;
    s.kind = uint8_t(kind);
    s.corr = ++corr;
    w.add(s, trace::RecType::Sync);
  }
  void range(const char* name, int64_t b, uint16_t depth) {
    trace::RangeRec g{};
    g.cpu_begin = b;
    g.cpu_end = t;
    t += 100;
    g.id = range_ids ? 1'000'000 + ++range_id : 0;
    g.tid = g.end_tid = pid;
    g.name_id = w.intern(name);
    g.depth = depth;
    g.kind = uint8_t(trace::RangeKind::PushPop);
    g.source = uint8_t(trace::RangeSource::Nvtx);
    w.add(g, trace::RecType::Range);
  }

  void step(int n) {
    int64_t step_b = t;
    t += 100;
    copy(0);
    int64_t fwd = t;
    t += 100;
    if (n == 2) {  // a kernel that takes no time, and the next starting at the same ns (stream busy)
      gpu[kCompute] = t + 50'000;
      trace::KernelRec k{};
      op(k.op, kLaunch, kCompute, 0, 0);
      k.name_id = w.intern("zero_length");
      k.grid[0] = k.block[0] = 1, k.grid[1] = k.grid[2] = k.block[1] = k.block[2] = 1;
      w.add(k, trace::RecType::Kernel);
    }
    for (int i = 0; i < 3; ++i) kernel("gemm", kCompute, 20'000);
    range("forward", fwd, 1);
    int64_t bwd = t;
    t += 100;
    kernel("gemm_bwd", kCompute, 15'000);
    uint64_t ev1 = event + 1;
    record(kCompute, n == 3 ? 3500 - 3000 + 18 : 0);  // step 3: starts 18 ns before the launch returned
    sync(trace::SyncKind::StreamWait, kWait, kNccl, ev1, 800);
    kernel(kAllReduce, kNccl, 30'000, kLaunchEx);
    kernel("gemm_bwd", kCompute, 25'000);
    uint64_t ev2 = event + 1;
    record(kNccl);
    sync(trace::SyncKind::StreamWait, kWait, kCompute, ev2, 800);
    range("backward", bwd, 1);
    int64_t opt = t;
    t += 100;
    set();
    kernel("adam", kCompute, 8'000);
    range("optimizer", opt, 1);
    sync(trace::SyncKind::Stream, kStreamSync, kCompute, 0,
         std::max<int64_t>(std::max(gpu[kCompute], gpu[kNccl]) - t, 0) + 1000);
    range(("ProfilerStep#" + std::to_string(n)).c_str(), step_b, 0);
  }

  void job() {
    trace::MemoryRec m{};
    m.cpu_begin = t;
    m.cpu_end = t + 5000;
    t += 6000;
    m.address = 0x7f0000000000ull;
    m.bytes = 64 << 20;
    m.tid = pid;
    m.device = device;
    m.api = kAlloc;
    m.op = uint8_t(trace::MemOp::Alloc);
    m.mem_kind = uint8_t(trace::MemKind::Device);
    w.add(m, trace::RecType::Memory);
    for (int n = 1; n <= 3; ++n) step(n);
    int64_t keep = t;
    t = gpu[kCompute] - 50'000;  // the loader thread, while step 3 runs
    copy(pid + 1);
    t = keep;
    sync(trace::SyncKind::Context, kCtxSync, 0, 0, 2000);
    REQUIRE(w.close(0, trace::kEndClean));
  }
};

struct Job {
  TempDir dir;
  std::vector<json> docs;
  std::vector<std::string> texts;
  std::vector<int64_t> pids;
  Job() {
    std::vector<std::string> files;
    for (int r = 0; r < 2; ++r) {
      files.push_back(dir.path + "/node-0.rank" + std::to_string(r) + ".pid" + std::to_string(100 + r) + ".cutrace");
      Rank(files.back(), r, 2).job();
    }
    std::string err;
    REQUIRE_MESSAGE(
        export_chrome(files, export_fixture::alignment_of({{files[0], 0}, {files[1], 0}}), dir.path + "/json", &err),
        err);
    for (int r = 0; r < 2; ++r) {
      texts.push_back(
          read_file(dir.path + "/json/node-0.rank" + std::to_string(r) + ".pid" + std::to_string(100 + r) + ".json"));
      docs.push_back(json::parse(texts.back()));
      pids.push_back(100 + r);
    }
  }
};

int64_t ns(const json& v) { return std::llround(v.get<double>() * 1000.0); }
int64_t ts(const json& ev) { return ns(ev["ts"]); }
int64_t end(const json& ev) { return ts(ev) + ns(ev["dur"]); }
bool is(const json& ev, const char* ph, const char* cat = nullptr) {
  return ev["ph"] == ph && (!cat || ev.value("cat", "") == cat);
}
std::vector<json> select(const json& doc, const char* ph, const char* cat = nullptr) {
  std::vector<json> out;
  for (const json& ev : doc["traceEvents"])
    if (is(ev, ph, cat)) out.push_back(ev);
  return out;
}
bool gpu_op(const json& ev) {
  std::string c = ev.value("cat", "");
  return ev["ph"] == "X" && (c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset");
}

// The slice a flow end binds to, as Perfetto and chrome://tracing bind ph s and ph f with
// "bp":"e": the innermost X slice on its (pid, tid) that encloses its time ([ts, end), or the
// very ts of a zero-length slice).
const json* bound(const json& doc, const json& flow) {
  const json* best = nullptr;
  int64_t t = ts(flow);
  for (const json& ev : doc["traceEvents"]) {
    if (ev["ph"] != "X" || ev["pid"] != flow["pid"] || ev["tid"] != flow["tid"]) continue;
    if (ts(ev) > t || (t >= end(ev) && !(end(ev) == t && ts(ev) == t))) continue;
    if (!best || ns(ev["dur"]) < ns((*best)["dur"])) best = &ev;
  }
  return best;
}

}  // namespace

TEST_CASE("kineto shape: top level as HTA reads it; distributedInfo only for distributed jobs") {
  Job j;
  for (int r = 0; r < 2; ++r) {
    const json& d = j.docs[size_t(r)];
    CHECK(d["schemaVersion"] == 1);
    CHECK(d["displayTimeUnit"] == "ms");
    CHECK(d["baseTimeNanoseconds"].is_number_integer());
    REQUIRE(d["deviceProperties"].size() == 1);
    CHECK(d["deviceProperties"][0]["id"] == r);
    CHECK(d["deviceProperties"][0]["numSms"] == 132);
    CHECK(d["distributedInfo"]["backend"] == "nccl");
    CHECK(d["distributedInfo"]["rank"] == r);
    CHECK(d["distributedInfo"]["world_size"] == 2);
    // HTA reads the file line by line until re.search(r'"rank":\s+(\d+)') matches.
    std::smatch m;
    std::string first_lines = j.texts[size_t(r)].substr(0, j.texts[size_t(r)].find("\"traceEvents\""));
    REQUIRE(std::regex_search(first_lines, m, std::regex(R"("rank":\s+(\d+))")));
    CHECK(m[1] == std::to_string(r));
    // ts and dur: microseconds with 3 decimals.
    CHECK(!std::regex_search(j.texts[size_t(r)], std::regex(R"re("(ts|dur)":-?\d+(\.\d{0,2}|\.\d{4,})?[,}])re")));
  }

  // One process that is not distributed: no distributedInfo, as Kineto writes it.
  TempDir dir;
  std::string t = dir.path + "/solo.cutrace";
  {
    export_fixture::Builder b(t, 0, 1, 7, 1'000);
    b.kernel("k", 2'000, 3'000, 4'000, 5'000);
    b.close();
  }
  std::string err;
  REQUIRE_MESSAGE(export_chrome({t}, export_fixture::alignment_of({{t, 0}}), dir.path + "/solo.json", &err), err);
  CHECK(!json::parse(read_file(dir.path + "/solo.json")).contains("distributedInfo"));
}

TEST_CASE("kineto shape: only GPU events carry stream and device; GPU events on pid device, tid stream") {
  Job j;
  for (int r = 0; r < 2; ++r) {
    const json& d = j.docs[size_t(r)];
    int host = 0, gpu = 0;
    for (const json& ev : d["traceEvents"]) {
      if (ev["ph"] != "X") continue;
      std::string cat = ev["cat"];
      if (ev["pid"] == j.pids[size_t(r)]) {
        ++host;
        INFO(ev.dump());
        CHECK((cat == "cuda_runtime" || cat == "cuda_driver" || cat == "user_annotation"));
        CHECK(!ev["args"].contains("stream"));
        CHECK(!ev["args"].contains("device"));
        continue;
      }
      ++gpu;
      INFO(ev.dump());
      CHECK(ev["pid"] == r);  // the device
      CHECK((cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "cuda_sync" ||
             cat == "gpu_user_annotation"));
      if (gpu_op(ev)) {
        CHECK(ev["args"]["device"] == ev["pid"]);
        CHECK(ev["args"]["stream"] == ev["tid"]);
        CHECK(ev["args"]["correlation"].get<int64_t>() > 0);
      }
      if (cat == "gpu_user_annotation") {
        CHECK(!ev["args"].contains("stream"));  // HTA takes an event with a stream for a GPU op
        CHECK((ev["tid"] == kCompute || ev["tid"] == kNccl));
      }
    }
    CHECK(host > 50);
    CHECK(gpu > 30);
  }
}

TEST_CASE("kineto shape: runtime names, CUPTI cbids, one host call per GPU op by correlation") {
  Job j;
  const std::map<std::string, std::pair<int, std::string>> runtime = {
      {"cudaLaunchKernel", {211, "cuLaunchKernel"}},
      {"cudaLaunchKernelExC", {430, "cuLaunchKernelEx"}},
      {"cudaMemcpyAsync", {41, "cuMemcpyHtoDAsync"}},
      {"cudaMemsetAsync", {51, "cuMemsetD32Async"}},
      {"cudaEventRecord", {135, "cuEventRecord"}},
      {"cudaStreamWaitEvent", {147, "cuStreamWaitEvent"}},
      {"cudaStreamSynchronize", {131, "cuStreamSynchronize"}},
      {"cudaDeviceSynchronize", {165, "cuCtxSynchronize"}},
      {"cudaMalloc", {20, "cuMemAlloc"}}};
  for (const json& d : j.docs) {
    std::map<int64_t, std::vector<json>> host_by_corr;
    std::map<std::string, int> counts;
    for (const json& ev : select(d, "X", "cuda_runtime")) {
      std::string n = ev["name"];
      INFO(ev.dump());
      REQUIRE(runtime.count(n));
      CHECK(ev["args"]["cbid"] == runtime.at(n).first);
      CHECK(ev["args"]["driver api"] == runtime.at(n).second);
      ++counts[n];
      if (ev["args"].contains("correlation")) host_by_corr[ev["args"]["correlation"]].push_back(ev);
    }
    CHECK(select(d, "X", "cuda_driver").empty());  // every call here has a runtime counterpart
    CHECK(counts["cudaLaunchKernel"] == 3 * 6 + 1);
    CHECK(counts["cudaLaunchKernelExC"] == 3);
    CHECK(counts["cudaMemcpyAsync"] == 4);
    CHECK(counts["cudaStreamWaitEvent"] == 6);
    for (const json& ev : d["traceEvents"]) {
      if (!gpu_op(ev)) continue;
      INFO(ev.dump());
      auto it = host_by_corr.find(ev["args"]["correlation"]);
      REQUIRE(it != host_by_corr.end());
      CHECK(it->second.size() == 1);
      std::string host = it->second[0]["name"];
      std::string cat = ev["cat"];
      CHECK(host == (cat == "gpu_memcpy"        ? "cudaMemcpyAsync"
                     : cat == "gpu_memset"      ? "cudaMemsetAsync"
                     : ev["name"] == kAllReduce ? "cudaLaunchKernelExC"
                                                : "cudaLaunchKernel"));
      // Kineto's External id: the same on the launch and on its GPU op.
      CHECK(it->second[0]["args"].value("External id", -1) == ev["args"].value("External id", -1));
    }
  }
}

TEST_CASE("kineto shape: GPU user annotations on the stream tids; kernels attribute to the innermost range") {
  Job j;
  for (const json& d : j.docs) {
    std::vector<json> anno = select(d, "X", "gpu_user_annotation");
    for (const json& a : anno) CHECK(a["name"].get<std::string>().rfind("ProfilerStep", 0) != 0);
    CHECK(select(d, "X", "user_annotation").size() == 3 * 4);  // the steps stay, on the host
    // HTA's get_gpu_kernels_with_user_annotations: annotations on the kernel's pid and tid whose
    // [ts, end) overlaps the kernel, the shortest (leaf) winning.
    std::map<std::string, int> attributed;
    int kernels = 0;
    for (const json& k : d["traceEvents"]) {
      if (!gpu_op(k)) continue;
      ++kernels;
      const json* leaf = nullptr;
      for (const json& a : anno) {
        if (a["pid"] != k["pid"] || a["tid"] != k["tid"]) continue;
        bool overlaps = ts(a) < std::max(end(k), ts(k) + 1) && ts(k) < end(a);
        if (overlaps && (!leaf || ns(a["dur"]) < ns((*leaf)["dur"]))) leaf = &a;
      }
      std::string name = k["name"];
      std::string want = name == "gemm" || name == "zero_length"      ? "forward"
                         : name == "gemm_bwd" || name == kAllReduce   ? "backward"
                         : name == "adam" || k["cat"] == "gpu_memset" ? "optimizer"
                                                                      : "";
      INFO(k.dump());
      if (want.empty()) {  // the step's input copy and the loader's: in no range but the step
        CHECK(!leaf);
        continue;
      }
      REQUIRE(leaf);
      CHECK((*leaf)["name"] == want);
      CHECK((*leaf)["args"]["External id"] == k["args"]["External id"]);
      ++attributed[want];
    }
    CHECK(kernels == 3 * 9 + 1 + 1);
    CHECK(attributed["forward"] == 3 * 3 + 1);
    CHECK(attributed["backward"] == 3 * 3);
    CHECK(attributed["optimizer"] == 3 * 2);
    // The all-reduce's annotation is on the NCCL stream.
    bool nccl_anno = false;
    for (const json& a : anno) nccl_anno |= a["tid"] == kNccl && a["name"] == "backward";
    CHECK(nccl_anno);
  }
}

TEST_CASE("kineto shape: Stream Wait Events name the cuEventRecord they wait on, and its stream") {
  Job j;
  for (const json& d : j.docs) {
    std::map<int64_t, json> records, waits;
    for (const json& ev : select(d, "X", "cuda_runtime")) {
      if (ev["name"] == "cudaEventRecord") records[ev["args"]["correlation"]] = ev;
      if (ev["name"] == "cudaStreamWaitEvent") waits[ev["args"]["correlation"]] = ev;
    }
    int compute_waits_on_nccl = 0, nccl_waits_on_compute = 0, stream_syncs = 0, context_syncs = 0;
    for (const json& s : select(d, "X", "cuda_sync")) {
      INFO(s.dump());
      const json& a = s["args"];
      CHECK(a["cuda_sync_kind"] == s["name"]);
      CHECK(a["device"] == s["pid"]);
      CHECK(s["dur"].get<double>() == 0.0);  // adds no GPU time to HTA's breakdowns
      if (s["name"] == "Stream Wait Event") {
        REQUIRE(waits.count(a["correlation"]));  // the host call of the same correlation
        REQUIRE(records.count(a["wait_on_cuda_event_record_corr_id"]));
        CHECK(s["tid"] == exporter::kSyncRow + a["stream"].get<int64_t>());
        compute_waits_on_nccl += a["stream"] == kCompute && a["wait_on_stream"] == kNccl;
        nccl_waits_on_compute += a["stream"] == kNccl && a["wait_on_stream"] == kCompute;
      } else if (s["name"] == "Stream Sync") {
        ++stream_syncs;
        CHECK(a["stream"] == kCompute);
      } else {
        CHECK(s["name"] == "Context Sync");
        CHECK(a["stream"] == -1);
        ++context_syncs;
      }
    }
    CHECK(compute_waits_on_nccl == 3);
    CHECK(nccl_waits_on_compute == 3);
    CHECK(stream_syncs == 3);
    CHECK(context_syncs == 1);
  }
}

TEST_CASE("kineto shape: GPU sync events add no GPU time to HTA's temporal breakdown") {
  Job j;
  // HTA: GPU events are those with a stream (-1 = none); kernel time is the span from the first
  // start to the last end, run time the union of their intervals.
  auto breakdown = [](const json& d, bool with_sync) {
    std::vector<std::pair<int64_t, int64_t>> iv;
    for (const json& ev : d["traceEvents"]) {
      if (ev["ph"] != "X" || !ev["args"].contains("stream") || ev["args"]["stream"] == -1) continue;
      if (!with_sync && ev["cat"] == "cuda_sync") continue;
      iv.push_back({ts(ev), end(ev)});
    }
    std::sort(iv.begin(), iv.end());
    int64_t run = 0, cur_b = iv[0].first, cur_e = iv[0].second;
    for (const auto& [b, e] : iv) {
      if (b > cur_e) run += cur_e - cur_b, cur_b = b;
      cur_e = std::max(cur_e, e);
    }
    run += cur_e - cur_b;
    return std::pair<int64_t, int64_t>{cur_e - iv[0].first, run};
  };
  for (const json& d : j.docs) CHECK(breakdown(d, true) == breakdown(d, false));
}

TEST_CASE("kineto shape: NCCL and occupancy args on kernels") {
  Job j;
  for (const json& d : j.docs) {
    int nccl = 0, gemm = 0;
    for (const json& k : select(d, "X", "kernel")) {
      const json& a = k["args"];
      if (k["name"] == kAllReduce) {
        ++nccl;
        CHECK(a["Collective name"] == "allreduce");
        CHECK(a["dtype"] == "BFloat16");
        CHECK(a["Group size"] == 2);
      } else {
        CHECK(!a.contains("Collective name"));
      }
      if (k["name"] == "gemm") {
        ++gemm;
        CHECK(a["blocks per SM"].get<double>() == doctest::Approx(2.0));
        CHECK(a["warps per SM"].get<double>() == doctest::Approx(16.0));
        CHECK(a["est. achieved occupancy %"] == 25);  // 2 of 8 resident blocks of 256 threads, of 2048
      }
    }
    CHECK(nccl == 3);
    CHECK(gemm == 9);
  }
}

TEST_CASE("kineto shape: no overlapping slices on any track; flows bind to their own ops") {
  Job j;
  for (const json& d : j.docs) {
    std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<int64_t, int64_t>>> tracks;
    for (const json& ev : select(d, "X")) tracks[{ev["pid"], ev["tid"]}].push_back({ts(ev), -end(ev)});
    for (auto& [track, v] : tracks) {
      std::sort(v.begin(), v.end());
      std::vector<int64_t> open;
      for (auto [b, neg_e] : v) {
        int64_t e = -neg_e;
        while (!open.empty() && open.back() <= b) open.pop_back();
        INFO("track pid " << track.first << " tid " << track.second << " slice at " << b);
        CHECK((open.empty() || e <= open.back()));
        open.push_back(e);
      }
    }
    std::map<int64_t, const json*> host, gpu;
    for (const json& ev : d["traceEvents"]) {
      if (ev["ph"] != "X" || !ev["args"].contains("correlation")) continue;
      (gpu_op(ev) ? gpu : host)[ev["args"]["correlation"]] = &ev;
    }
    int flows = 0;
    for (const json& f : d["traceEvents"]) {
      if (f["ph"] != "s" && f["ph"] != "f") continue;
      ++flows;
      INFO(f.dump());
      const json* b = bound(d, f);
      REQUIRE(b);
      CHECK(b == (f["ph"] == "s" ? host : gpu)[f["id"]]);
    }
    CHECK(flows == 2 * 29);
  }
}

TEST_CASE("nest_slices: an overlap moves the slice by the smaller amount; nested slices stay") {
  std::vector<exporter::Slice> v = {{0, 100, 1},   {82, 200, 2},  {10, 20, 3},
                                    {190, 195, 4}, {300, 400, 5}, {310, 420, 6}};
  exporter::nest_slices(v);
  std::map<uint64_t, exporter::Slice> by;
  for (const auto& s : v) by[s.ord] = s;
  CHECK(by[2].b == 100);  // 18 ns inside: starts where the other ends
  CHECK(by[2].e == 200);
  CHECK(by[2].moved);
  CHECK(!by[3].moved);  // nested
  CHECK(!by[4].moved);
  CHECK(by[6].b == 310);  // 20 ns past the end of a 100 ns slice it started 10 ns into: ends with it
  CHECK(by[6].e == 400);
}

TEST_CASE("kineto names: runtime counterparts, driver-only calls, NCCL kernel names") {
  CHECK(kineto::call_name("cuLaunchKernel").name == "cudaLaunchKernel");
  CHECK(kineto::call_name("cuLaunchKernel").cbid == 211);
  CHECK(kineto::call_name("cuModuleUnload").name == "cuModuleUnload");
  CHECK(!kineto::call_name("cuModuleUnload").runtime);
  CHECK(kineto::call_name("cuModuleUnload").cbid == 22);
  CHECK(kineto::call_name("cuSomethingNew").cbid == -1);
  CHECK(kineto::call_name("cuMemAlloc_v2").name == "cudaMalloc");
  CHECK(kineto::call_name("cuLaunchKernel_ptsz").name == "cudaLaunchKernel");
  kineto::Collective c;
  REQUIRE(
      kineto::nccl_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", &c));
  CHECK(c.name == "allgather");
  CHECK(c.dtype == "Char");
  REQUIRE(kineto::nccl_collective("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", &c));
  CHECK(c.name == "reduce_scatter");
  CHECK(c.dtype == "Float");
  REQUIRE(kineto::nccl_collective("ncclDevKernel_SendRecv", &c));
  CHECK(c.dtype.empty());
  CHECK(!kineto::nccl_collective("gemm", &c));
}

TEST_CASE("kineto shape: ranges without ids still get one GPU annotation each") {
  TempDir dir;
  std::string path = dir.path + "/node-0.rank0.pid100.cutrace";
  {
    Rank r(path, 0, 1);
    r.range_ids = false;
    r.job();
  }
  std::string err;
  REQUIRE_MESSAGE(export_chrome({path}, export_fixture::alignment_of({{path, 0}}), dir.path + "/t.json", &err), err);
  json d = json::parse(read_file(dir.path + "/t.json"));
  std::map<std::pair<std::string, int64_t>, int> anno;
  for (const json& a : select(d, "X", "gpu_user_annotation")) {
    ++anno[{a["name"], a["tid"]}];
    CHECK(!a["args"].contains("External id"));
  }
  CHECK(anno == std::map<std::pair<std::string, int64_t>, int>{{{"forward", kCompute}, 3},
                                                               {{"backward", kCompute}, 3},
                                                               {{"backward", kNccl}, 3},
                                                               {{"optimizer", kCompute}, 3}});
}
