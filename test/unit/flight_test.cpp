// TraceWriter's flight mode (set_flight): definitions kept whole, the ring of recent blocks, its
// age and byte bounds, snapshots that never repeat a block, and files the reader reads whole.
#include <time.h>

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

trace::KernelRec kernel(uint64_t corr, uint32_t name_id) {
  trace::KernelRec k{};
  k.op.corr = corr;
  k.op.cpu_begin = 1000 + int64_t(corr) * 10;
  k.op.cpu_end = k.op.cpu_begin + 5;
  k.op.tid = 77;
  k.name_id = name_id;
  k.grid[0] = uint32_t(corr % 1000) + 1;
  return k;
}

void add_kernels(TraceWriter& w, uint64_t from, uint64_t to, const char* name) {
  uint32_t id = w.intern(name);
  for (uint64_t i = from; i < to; ++i) {
    trace::KernelRec k = kernel(i, id);
    w.add(k, trace::RecType::Kernel);
  }
}

struct Read {
  std::vector<uint64_t> corrs;
  std::vector<std::string> names;
  std::vector<uint32_t> grids;
  std::vector<std::string> windows;  // "begin:REASON", "end:REASON"
  uint64_t records = 0;              // every record but End
  trace::EndRec end{};
  bool complete = false;
};

Read read_all(const std::string& file) {
  TraceReader r;
  std::string err;
  Read out;
  REQUIRE(r.open_memory(file, "flight.cutrace", &err));
  REQUIRE(r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::Kernel) {
      trace::KernelRec k = rec.as<trace::KernelRec>();
      out.corrs.push_back(uint64_t(k.op.corr));  // packed: a copy, not a reference
      out.names.emplace_back(r.str(uint32_t(k.name_id)));
      out.grids.push_back(uint32_t(k.grid[0]));
    } else if (rec.type() == trace::RecType::Window) {
      trace::WindowRec win = rec.as<trace::WindowRec>();
      out.windows.push_back(std::string(win.edge == uint8_t(trace::WindowEdge::Begin) ? "begin:" : "end:") +
                            std::string(r.str(win.reason_id)));
    }
    if (rec.type() != trace::RecType::End) ++out.records;
  }));
  out.complete = r.status().complete;
  out.end = r.status().end;
  return out;
}

void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, nullptr);
}

}  // namespace

TEST_CASE("flight writer: snapshots hold the definitions and the kept blocks once; close writes none") {
  std::string file;
  TraceWriter w;
  w.set_flight(int64_t(3600) * 1000000000, 64u << 20);
  REQUIRE(w.open_memory(&file));
  w.meta("pid", "42");
  add_kernels(w, 0, 100, "early");
  w.flush();
  const size_t header_only = file.size();
  CHECK(header_only == sizeof(trace::FileHeader));  // nothing but the header before a trigger
  w.snapshot("first");
  add_kernels(w, 100, 200, "late");
  w.snapshot("second");
  add_kernels(w, 200, 300, "after");  // no trigger: never written
  REQUIRE(w.close(0, trace::kEndClean));

  Read got = read_all(file);
  REQUIRE(got.corrs.size() == 200);
  for (uint64_t i = 0; i < 200; ++i) {
    CHECK(got.corrs[i] == i);
    CHECK(got.grids[i] == uint32_t(i % 1000) + 1);  // launch configs resolved in every block
    CHECK(got.names[i] == (i < 100 ? "early" : "late"));
  }
  CHECK(got.windows ==
        std::vector<std::string>{"begin:flight:first", "end:flight:first", "begin:flight:second", "end:flight:second"});
  CHECK(got.complete);
  CHECK(uint64_t(got.end.records) == got.records);  // End counts the records in the file, not those recorded
  CHECK(w.snapshots() == 2);
}

TEST_CASE("flight writer: blocks begun before the kept span are dropped") {
  std::string file;
  TraceWriter w;
  w.set_flight(int64_t(200) * 1000000, 64u << 20);  // 200 ms
  REQUIRE(w.open_memory(&file));
  add_kernels(w, 0, 50, "old");
  w.flush();
  sleep_ms(300);
  w.flush();  // no record since: the next block begins now
  add_kernels(w, 50, 60, "new");
  w.snapshot("test");
  REQUIRE(w.close(0, trace::kEndClean));
  Read got = read_all(file);
  REQUIRE(got.corrs.size() == 10);
  CHECK(got.corrs.front() == 50);
  CHECK(got.names.front() == "new");
}

TEST_CASE("flight writer: past the byte budget the oldest blocks go, and the snapshot says so") {
  std::string file;
  TraceWriter w;
  w.set_flight(int64_t(3600) * 1000000000, 1);  // no block fits
  REQUIRE(w.open_memory(&file));
  add_kernels(w, 0, 20, "k");
  w.flush();
  w.snapshot("budget");
  REQUIRE(w.close(0, trace::kEndClean));
  Read got = read_all(file);
  CHECK(got.corrs.empty());
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "flight.cutrace", &err));
  REQUIRE(r.read([](const Record&) {}));
  std::string meta(r.meta("flight_snapshot.0"));
  CHECK(meta.find("trigger=budget ") == 0);
  CHECK(meta.find("budget_cut_blocks=1") != std::string::npos);
}

TEST_CASE("flight writer: without a trigger the file holds the header, the definitions and End") {
  std::string file;
  TraceWriter w;
  w.set_flight(int64_t(1000000000), 64u << 20);
  REQUIRE(w.open_memory(&file));
  w.meta("flight_seconds", "1");
  add_kernels(w, 0, 30, "k");
  REQUIRE(w.close(0, trace::kEndClean));
  Read got = read_all(file);
  CHECK(got.corrs.empty());
  CHECK(got.windows.empty());
  CHECK(got.complete);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(file, "flight.cutrace", &err));
  CHECK(r.meta("flight_seconds") == "1");
}
