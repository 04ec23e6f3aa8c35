// `cutrace export --format perfetto` on synthetic traces, read back with a minimal protobuf
// decoder: packets, interning, track descriptors, BEGIN/END balance and nesting, flows, counters.
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include "test/unit/export_fixture.h"
#include "tools/export/common.h"
#include "tools/export/exports.h"
#include "tools/export/protobuf_writer.h"

using namespace cutrace;
using namespace export_fixture;

namespace {

// ---- a minimal protobuf reader --------------------------------------------------------------

struct Field {
  uint32_t num = 0;
  uint32_t wire = 0;
  uint64_t v = 0;      // varint / fixed64 value
  std::string_view b;  // length-delimited bytes
};

uint64_t varint(std::string_view s, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    REQUIRE(i < s.size());
    uint8_t c = uint8_t(s[i++]);
    v |= uint64_t(c & 0x7F) << shift;
    if (c < 0x80) return v;
  }
  FAIL("varint longer than 10 bytes");
  return 0;
}

std::vector<Field> fields(std::string_view s) {
  std::vector<Field> out;
  size_t i = 0;
  while (i < s.size()) {
    Field f;
    uint64_t key = varint(s, i);
    f.num = uint32_t(key >> 3);
    f.wire = uint32_t(key & 7);
    REQUIRE(f.num > 0);
    switch (f.wire) {
      case 0: f.v = varint(s, i); break;
      case 1:
        REQUIRE(i + 8 <= s.size());
        std::memcpy(&f.v, s.data() + i, 8);
        i += 8;
        break;
      case 2: {
        uint64_t n = varint(s, i);
        REQUIRE(i + n <= s.size());
        f.b = s.substr(i, n);
        i += n;
        break;
      }
      default: FAIL("unexpected wire type " << f.wire);
    }
    out.push_back(f);
  }
  return out;
}

const Field* field(const std::vector<Field>& fs, uint32_t num) {
  for (const Field& f : fs)
    if (f.num == num) return &f;
  return nullptr;
}

// ---- the trace, decoded ---------------------------------------------------------------------

struct Desc {
  uint64_t uuid = 0, parent = 0;
  std::string name;
  bool process = false, thread = false, counter = false;
  int64_t pid = 0, tid = 0;
  uint64_t unit = 0;
  std::string unit_name;  // CounterDescriptor.unit_name
  uint32_t seq = 0;
  bool has_ts = false;  // the descriptor's packet has a timestamp
  uint64_t ts = 0;
};

struct DecodedAnn {
  std::string name;
  bool is_int = false, is_str = false, is_double = false;
  int64_t i = 0;
  double d = 0;
  std::string s;
};

struct Event {
  uint64_t ts = 0;
  uint32_t seq = 0;
  uint64_t type = 0, track = 0;
  std::string name;
  std::vector<std::string> cats;
  std::vector<uint64_t> flows, terminating;
  std::vector<DecodedAnn> anns;
  bool has_double = false, has_int = false;
  double d = 0;
  int64_t i = 0;
  const DecodedAnn* ann(const std::string& n) const {
    for (const DecodedAnn& a : anns)
      if (a.name == n) return &a;
    return nullptr;
  }
};

struct Decoded {
  size_t packets = 0;
  std::map<uint64_t, Desc> tracks;
  std::vector<Event> events;
  std::map<uint32_t, size_t> interned_packets;  // per sequence
  std::map<uint32_t, std::map<uint64_t, std::string>> names, cats, ann_names;
  std::vector<std::string> errors;  // structural problems found while walking

  const Desc* track(const std::string& name) const {
    for (const auto& [u, d] : tracks)
      if (d.name == name) return &d;
    return nullptr;
  }
  std::vector<const Event*> on(uint64_t track, uint64_t type) const {
    std::vector<const Event*> out;
    for (const Event& e : events)
      if (e.track == track && e.type == type) out.push_back(&e);
    return out;
  }
};

void interned(Decoded& d, uint32_t seq, std::string_view b) {
  for (const Field& f : fields(b)) {
    auto e = fields(f.b);
    const Field* iid = field(e, 1);
    const Field* name = field(e, 2);
    REQUIRE(iid);
    REQUIRE(name);
    auto& table = f.num == 1 ? d.cats[seq] : f.num == 2 ? d.names[seq] : d.ann_names[seq];
    REQUIRE((f.num >= 1 && f.num <= 3));
    CHECK(table.count(iid->v) == 0);  // an iid is never redefined
    table[iid->v] = std::string(name->b);
  }
}

Decoded decode(const std::string& bytes) {
  Decoded d;
  std::map<uint32_t, bool> cleared;
  std::map<uint32_t, uint64_t> last_ts;
  for (const Field& p : fields(bytes)) {
    REQUIRE(p.num == 1);
    REQUIRE(p.wire == 2);
    ++d.packets;
    auto pf = fields(p.b);
    const Field* seq = field(pf, 10);
    uint32_t s = seq ? uint32_t(seq->v) : 0;
    if (const Field* td = field(pf, 60)) {
      Desc x;
      for (const Field& f : fields(td->b)) {
        if (f.num == 1) x.uuid = f.v;
        if (f.num == 5) x.parent = f.v;
        if (f.num == 2) x.name = std::string(f.b);
        if (f.num == 3) {
          x.process = true;
          for (const Field& g : fields(f.b)) {
            if (g.num == 1) x.pid = int64_t(g.v);
            if (g.num == 6) x.name = std::string(g.b);
          }
        }
        if (f.num == 4) {
          x.thread = true;
          for (const Field& g : fields(f.b)) {
            if (g.num == 1) x.pid = int64_t(g.v);
            if (g.num == 2) x.tid = int64_t(g.v);
            if (g.num == 5) x.name = std::string(g.b);
          }
        }
        if (f.num == 8) {
          x.counter = true;
          auto cf = fields(f.b);
          if (const Field* u = field(cf, 3)) x.unit = u->v;
          if (const Field* u = field(cf, 6)) x.unit_name = std::string(u->b);
        }
      }
      x.seq = s;
      if (const Field* t = field(pf, 8)) x.has_ts = true, x.ts = t->v;
      REQUIRE(x.uuid != 0);
      CHECK(d.tracks.count(x.uuid) == 0);
      if (x.parent) CHECK(d.tracks.count(x.parent) == 1);  // parents come first
      d.tracks[x.uuid] = x;
    }
    const Field* flags = field(pf, 13);
    if (const Field* id = field(pf, 12)) {
      REQUIRE(flags);
      CHECK((flags->v & 1) == 1);  // the interned data comes with a cleared state
      cleared[s] = true;
      ++d.interned_packets[s];
      interned(d, s, id->b);
    }
    const Field* te = field(pf, 11);
    if (!te) continue;
    REQUIRE(flags);
    CHECK((flags->v & 2) == 2);
    CHECK(cleared[s]);
    Event e;
    e.seq = s;
    const Field* ts = field(pf, 8);
    REQUIRE(ts);
    e.ts = ts->v;
    CHECK(e.ts >= last_ts[s]);  // time order within a sequence
    last_ts[s] = e.ts;
    for (const Field& f : fields(te->b)) {
      switch (f.num) {
        case 9: e.type = f.v; break;
        case 11: e.track = f.v; break;
        case 10: e.name = d.names[s].count(f.v) ? d.names[s][f.v] : "(no iid " + std::to_string(f.v) + ")"; break;
        case 3: e.cats.push_back(d.cats[s][f.v]); break;
        case 47:
          CHECK(f.wire == 1);
          e.flows.push_back(f.v);
          break;
        case 48:
          CHECK(f.wire == 1);
          e.terminating.push_back(f.v);
          break;
        case 30:
          e.has_int = true;
          e.i = int64_t(f.v);
          break;
        case 44: {
          CHECK(f.wire == 1);
          e.has_double = true;
          std::memcpy(&e.d, &f.v, 8);
          break;
        }
        case 4: {
          DecodedAnn a;
          for (const Field& g : fields(f.b)) {
            if (g.num == 1) a.name = d.ann_names[s][g.v];
            if (g.num == 4) a.is_int = true, a.i = int64_t(g.v);
            if (g.num == 6) a.is_str = true, a.s = std::string(g.b);
            if (g.num == 5) a.is_double = true, std::memcpy(&a.d, &g.v, 8);
          }
          e.anns.push_back(a);
          break;
        }
        default: d.errors.push_back("unexpected TrackEvent field " + std::to_string(f.num));
      }
    }
    CHECK(d.tracks.count(e.track) == 1);  // declared before use
    d.events.push_back(std::move(e));
  }
  return d;
}

// Replays BEGIN/END per track: every END closes an open slice, nothing stays open. Returns, for
// each BEGIN (by index in d.events), the names of the slices open on its track at that moment.
std::map<size_t, std::vector<std::string>> replay(const Decoded& d) {
  std::map<uint64_t, std::vector<size_t>> open;
  std::map<size_t, std::vector<std::string>> parents;
  for (size_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    if (e.type == 1) {
      std::vector<std::string> names;
      for (size_t j : open[e.track]) names.push_back(d.events[j].name);
      parents[i] = names;
      open[e.track].push_back(i);
    } else if (e.type == 2) {
      REQUIRE_MESSAGE(!open[e.track].empty(), "END without BEGIN on track " << e.track);
      open[e.track].pop_back();
    }
  }
  for (const auto& [t, v] : open) CHECK_MESSAGE(v.empty(), "slices left open on track " << t);
  return parents;
}

constexpr int64_t kT0 = 1'000'000'000;
constexpr int64_t kOffset = 5'000'000'123;

Decoded export_standard(TempDir& dir, std::string* bytes = nullptr) {
  std::string t = dir.path + "/node.rank3.pid4242.cutrace";
  {
    Builder b(t, 3, 4, 4242, kT0);
    standard_trace(b, kT0);
    b.close();
  }
  std::string err;
  std::string out = dir.path + "/t.pftrace";
  REQUIRE_MESSAGE(export_perfetto({t}, alignment_of({{t, kOffset}}), out, &err), err);
  std::string data = read_file(out);
  REQUIRE(!data.empty());
  if (bytes) *bytes = data;
  return decode(data);
}

const Event* begin_named(const Decoded& d, const std::string& name, size_t* index = nullptr) {
  for (size_t i = 0; i < d.events.size(); ++i)
    if (d.events[i].type == 1 && d.events[i].name == name) {
      if (index) *index = i;
      return &d.events[i];
    }
  return nullptr;
}

}  // namespace

TEST_CASE("perfetto: protobuf encoding primitives") {
  std::string o;
  pb::varint(o, 0);
  pb::varint(o, 127);
  pb::varint(o, 128);
  pb::varint(o, 300);
  CHECK(o == std::string("\x00\x7f\x80\x01\xac\x02", 6));
  o.clear();
  pb::i64(o, 1, -1);  // int64: ten bytes of two's complement
  CHECK(o.size() == 11);
  o.clear();
  pb::fixed64(o, 47, 0x0102030405060708ull);
  CHECK(o == std::string("\xf9\x02\x08\x07\x06\x05\x04\x03\x02\x01", 10));
  o.clear();
  pb::bytes(o, 2, "abc");
  CHECK(o ==
        "\x12\x03"
        "abc");
}

TEST_CASE("perfetto: packets, interning and track descriptors") {
  TempDir dir;
  std::string bytes;
  Decoded d = export_standard(dir, &bytes);
  CHECK(d.errors.empty());
  CHECK(d.packets == exporter::g_stats.events);
  CHECK(bytes.size() == exporter::g_stats.bytes);
  CHECK(d.interned_packets[1] == 1);  // all names of the sequence, once
  std::set<std::string> names;
  for (const auto& [iid, n] : d.names[1]) names.insert(n);
  for (const char* n : {"gemm", kHostile, "cuLaunchKernel", "cuMemcpyHtoDAsync", "cuStreamSynchronize",
                        "Memcpy HtoD (Pinned -> Device)", "Memset (Device)", "step", "inner", "async", "checkpoint"})
    CHECK_MESSAGE(names.count(n) == 1, std::string(n));
  CHECK(names.count("no_time") == 0);  // a kernel without GPU time has only its launch
  std::vector<std::string> cats;
  for (const auto& [iid, c] : d.cats[1]) cats.push_back(c);
  CHECK(cats == std::vector<std::string>{"cuda_driver", "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync",
                                         "user_annotation", "gpu_user_annotation", "cutrace"});

  const Desc* proc = d.track("python3 (rank 3)");
  REQUIRE(proc);
  CHECK(proc->process);
  CHECK(proc->pid == 4242);
  const Desc* thread = d.track("trainer (4242)");
  REQUIRE(thread);
  CHECK(thread->thread);
  CHECK(thread->pid == 4242);
  CHECK(thread->tid == 4242);
  const Desc* gpu = d.track("GPU 0");
  REQUIRE(gpu);
  CHECK(gpu->process);
  CHECK(gpu->pid != 4242);
  CHECK(d.track("GPU 1") == nullptr);  // sampled by NVML, not used by this process
  const Desc* stream = d.track("stream 1");
  REQUIRE(stream);
  CHECK(stream->parent == gpu->uuid);
  const Desc* mem = d.track("GPU memory used");
  REQUIRE(mem);
  CHECK(mem->counter);
  CHECK(mem->unit == 3);  // bytes
  CHECK(mem->parent == gpu->uuid);
  const Desc* cpu = d.track("CPU utilization (host, %)");
  REQUIRE(cpu);
  CHECK(cpu->counter);
  CHECK(cpu->parent == proc->uuid);
  for (const char* pct : {"CPU utilization (host, %)", "CPU utilization (process, %)", "GPU utilization (%)"}) {
    const Desc* c = d.track(pct);
    REQUIRE_MESSAGE(c, pct);
    CHECK_MESSAGE(c->unit_name == "%", pct);
  }
  CHECK(mem->unit_name.empty());
  // Every descriptor has a timestamp: its sequence's first event's.
  uint64_t first = UINT64_MAX;
  for (const Event& ev : d.events) first = std::min(first, ev.ts);
  for (const auto& [u, t] : d.tracks) {
    CHECK_MESSAGE(t.has_ts, t.name);
    CHECK_MESSAGE(t.ts == first, t.name);
  }
  for (const auto& [u, t] : d.tracks) CHECK(t.name.find("overlap") == std::string::npos);
}

TEST_CASE("perfetto: slices balance and nest; GPU work on its stream at exact times") {
  TempDir dir;
  Decoded d = export_standard(dir);
  auto parents = replay(d);
  const Desc* stream = d.track("stream 1");
  const Desc* thread = d.track("trainer (4242)");
  REQUIRE(stream);
  REQUIRE(thread);

  std::vector<std::string> gpu;
  for (const Event* e : d.on(stream->uuid, 1)) gpu.push_back(e->name);
  CHECK(gpu == std::vector<std::string>{"gemm", kHostile, "Memcpy HtoD (Pinned -> Device)", "Memset (Device)"});
  CHECK(d.on(stream->uuid, 2).size() == 4);
  const Event* gemm = begin_named(d, "gemm");
  REQUIRE(gemm);
  CHECK(gemm->ts == uint64_t(kT0 + 10'000 + kOffset));
  CHECK(gemm->cats == std::vector<std::string>{"kernel"});
  REQUIRE(gemm->ann("correlation"));
  CHECK(gemm->ann("correlation")->i == 1001);
  REQUIRE(gemm->ann("grid"));
  CHECK(gemm->ann("grid")->s == "[4, 2, 1]");
  CHECK(gemm->ann("shared memory")->i == 3072);
  CHECK(gemm->ann("registers per thread")->i == 32);
  const Event* copy = begin_named(d, "Memcpy HtoD (Pinned -> Device)");
  REQUIRE(copy);
  REQUIRE(copy->ann("memory bandwidth (GB/s)"));
  CHECK(copy->ann("memory bandwidth (GB/s)")->d == doctest::Approx(2.0));
  // gemm ends at 20'000 when the hostile kernel begins: END first, so they do not nest.
  size_t hostile_idx = 0;
  REQUIRE(begin_named(d, kHostile, &hostile_idx));
  CHECK(parents[hostile_idx].empty());

  // Host: launches inside "step" and "inner", in the order of time.
  for (size_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    if (e.type != 1 || e.track != thread->uuid) continue;
    const DecodedAnn* corr = e.ann("correlation");
    if (e.name == "cuLaunchKernel" && corr && corr->i == 1002)
      CHECK(parents[i] == std::vector<std::string>{"step", "inner"});
    if (e.name == "cuMemcpyHtoDAsync")  // begins when "inner" ends
      CHECK(parents[i] == std::vector<std::string>{"step"});
    if (e.name == "cuMemAlloc") CHECK(parents[i].empty());
    if (e.name == "cuStreamSynchronize") {
      CHECK(parents[i] == std::vector<std::string>{"step"});
      CHECK(e.cats == std::vector<std::string>{"cuda_sync"});
    }
  }
  // The start/end range has a track of its own; GPU projections nest on the GPU.
  const Desc* se = d.track("NVTX start/end ranges");
  REQUIRE(se);
  REQUIRE(d.on(se->uuid, 1).size() == 1);
  CHECK(d.on(se->uuid, 1)[0]->name == "async");
  const Desc* proj = d.track("NVTX ranges (GPU projection)");
  REQUIRE(proj);
  size_t inner_gpu = 0;
  bool found = false;
  for (size_t i = 0; i < d.events.size(); ++i)
    if (d.events[i].track == proj->uuid && d.events[i].type == 1 && d.events[i].name == "inner")
      inner_gpu = i, found = true;
  REQUIRE(found);
  CHECK(parents[inner_gpu] == std::vector<std::string>{"async", "step"});
  CHECK(d.events[inner_gpu].cats == std::vector<std::string>{"gpu_user_annotation"});
}

TEST_CASE("perfetto: flows from launches to GPU work, instants and counters") {
  TempDir dir;
  Decoded d = export_standard(dir);
  std::multiset<uint64_t> out, in;
  for (const Event& e : d.events) {
    out.insert(e.flows.begin(), e.flows.end());
    in.insert(e.terminating.begin(), e.terminating.end());
  }
  CHECK(out.size() == 4);  // gemm, hostile, memcpy, memset: "no_time" has no GPU side
  CHECK(out == in);
  const Desc* thread = d.track("trainer (4242)");
  const Desc* stream = d.track("stream 1");
  for (const Event& e : d.events) {
    if (!e.flows.empty()) CHECK(e.track == thread->uuid);
    if (!e.terminating.empty()) CHECK(e.track == stream->uuid);
  }
  auto marks = d.on(thread->uuid, 3);
  REQUIRE(marks.size() == 1);
  CHECK(marks[0]->name == "checkpoint");
  CHECK(marks[0]->ts == uint64_t(kT0 + 29'500 + kOffset));
  const Desc* proc = d.track("python3 (rank 3)");
  auto windows = d.on(proc->uuid, 3);
  REQUIRE(windows.size() == 2);
  CHECK(windows[0]->name == "capture begins (process)");

  auto cpu = d.on(d.track("CPU utilization (host, %)")->uuid, 4);
  REQUIRE(cpu.size() == 2);
  CHECK(cpu[0]->has_double);
  CHECK(cpu[0]->d == doctest::Approx(12.34));
  auto proc_cpu = d.on(d.track("CPU utilization (process, %)")->uuid, 4);
  REQUIRE(proc_cpu.size() == 2);
  CHECK(proc_cpu[0]->d == doctest::Approx(100.5));
  auto util = d.on(d.track("GPU utilization (%)")->uuid, 4);
  REQUIRE(util.size() == 1);
  CHECK(util[0]->d == doctest::Approx(87));
  auto mem = d.on(d.track("GPU memory used")->uuid, 4);
  REQUIRE(mem.size() == 1);
  CHECK(mem[0]->has_int);
  CHECK(mem[0]->i == int64_t(3ull << 30));
}

TEST_CASE("perfetto: overlapping slices move to an overlap track instead of breaking nesting") {
  TempDir dir;
  std::string t = dir.path + "/o.cutrace";
  {
    Builder b(t, 0, 1, 77, 1'000);
    b.kernel("a", 2'000, 3'000, 10'000, 20'000);
    b.kernel("b", 2'500, 3'500, 15'000, 25'000);  // overlaps "a" on stream 1 without nesting in it
    b.kernel("c", 4'000, 4'100, 20'000, 21'000);  // nests in "b" on the base track
    b.range("r", 2'800, 3'200, 0, 0);             // crosses both launch calls
    b.close();
  }
  std::string err;
  REQUIRE_MESSAGE(export_perfetto({t}, alignment_of({{t, 0}}), dir.path + "/o.pftrace", &err), err);
  Decoded d = decode(read_file(dir.path + "/o.pftrace"));
  replay(d);
  const Desc* stream = d.track("stream 1");
  const Desc* lane = d.track("stream 1 (overlap 1)");
  REQUIRE(stream);
  REQUIRE(lane);
  CHECK(lane->parent == stream->uuid);
  std::vector<std::string> base, extra;
  for (const Event* e : d.on(stream->uuid, 1)) base.push_back(e->name);
  for (const Event* e : d.on(lane->uuid, 1)) extra.push_back(e->name);
  CHECK(base == std::vector<std::string>{"a", "c"});
  CHECK(extra == std::vector<std::string>{"b"});
  // Host: "b"'s launch overlaps "a"'s; the range "r" nests in "b"'s launch on the overlap track.
  const Desc* host_lane = d.track("trainer (77) (overlap 1)");
  REQUIRE(host_lane);
  std::vector<std::string> host_extra;
  for (const Event* e : d.on(host_lane->uuid, 1)) host_extra.push_back(e->name);
  CHECK(host_extra == std::vector<std::string>{"cuLaunchKernel", "r"});
}

TEST_CASE("perfetto: ranks are sequences of one file; a pid seen twice is kept apart") {
  TempDir dir;
  std::string r0 = dir.path + "/a.rank0.pid500.cutrace", r1 = dir.path + "/b.rank1.pid500.cutrace";
  for (int rank = 0; rank < 2; ++rank) {
    Builder b(rank ? r1 : r0, rank, 2, 500, 1'000, uint16_t(rank));
    b.kernel(rank ? "k1" : "k0", 2'000, 3'000, 4'000, 5'000);
    b.close();
  }
  std::string err;
  REQUIRE_MESSAGE(export_perfetto({r0, r1}, alignment_of({{r0, 100}, {r1, 200}}), dir.path + "/two.pftrace", &err),
                  err);
  Decoded d = decode(read_file(dir.path + "/two.pftrace"));
  replay(d);
  CHECK(d.interned_packets[1] == 1);
  CHECK(d.interned_packets[2] == 1);
  CHECK(d.names[1].size() >= 2);
  const Desc* p0 = d.track("python3 (rank 0)");
  const Desc* p1 = d.track("python3 (rank 1, pid 500)");
  REQUIRE(p0);
  REQUIRE(p1);
  CHECK(p0->pid == 500);
  CHECK(p1->pid != 500);
  REQUIRE(d.track("GPU 0 (rank 0)"));
  REQUIRE(d.track("GPU 1 (rank 1)"));
  const Event* k1 = begin_named(d, "k1");
  REQUIRE(k1);
  CHECK(k1->seq == 2);
  CHECK(k1->ts == 4'200);
  CHECK(begin_named(d, "k0")->ts == 4'100);
  std::set<int64_t> tids;
  for (const auto& [u, t] : d.tracks)
    if (t.thread) tids.insert(t.tid);
  CHECK(tids.size() == 2);  // rank 1's thread 500 got a tid of its own
}

TEST_CASE("perfetto: clear errors") {
  TempDir dir;
  std::string t = dir.path + "/a.cutrace";
  {
    Builder b(t, 0, 1, 7, 1'000);
    b.close();
  }
  std::string err;
  CHECK(!export_perfetto({t}, alignment_of({{t, 0}}), dir.path + "/missing/dir/x.pftrace", &err));
  CHECK(err.find("cannot create") != std::string::npos);
  err.clear();
  std::string junk = dir.path + "/junk.cutrace";
  { std::ofstream(junk) << "junk"; }
  CHECK(!export_perfetto({junk}, alignment_of({{t, 0}}), dir.path + "/y.pftrace", &err));
  CHECK(err.find("junk.cutrace") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path + "/y.pftrace"));
  // With a readable trace beside it: that one is exported, the junk named in g_stats.skipped.
  err.clear();
  CHECK(export_perfetto({t, junk}, alignment_of({{t, 0}}), dir.path + "/z.pftrace", &err));
  REQUIRE(exporter::g_stats.skipped.size() == 1);
  CHECK(exporter::g_stats.skipped[0].find("junk.cutrace") != std::string::npos);
  CHECK(read_file(dir.path + "/z.pftrace").size() > 0);
  // An existing directory as OUT: the trace goes inside it.
  err.clear();
  REQUIRE_MESSAGE(export_perfetto({t}, alignment_of({{t, 0}}), dir.path, &err), err);
  CHECK(read_file(dir.path + "/trace.pftrace").size() > 0);
}
