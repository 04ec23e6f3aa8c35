// `cutrace hang`'s analysis (tools/analysis/hang.h): a rank's trace with Hang records read back
// (the collective it waits in, what is in flight, a hang that ended), and the job's verdict (the
// collective, the ranks that never reached it, ranks without a trace).
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "tools/analysis/hang.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

void kernel(TraceWriter& w, const char* name, uint64_t corr, int64_t t, uint16_t flags = 0) {
  trace::KernelRec k{};
  k.op.corr = corr, k.op.cpu_begin = t, k.op.cpu_end = t + 10, k.op.stream = 2, k.op.tid = 7, k.op.flags = flags;
  if (!(flags & trace::kOpPendingExit)) k.op.gpu_start = t + 20, k.op.gpu_end = t + 30;
  k.name_id = w.intern(name);
  k.grid[0] = k.grid[1] = k.grid[2] = k.block[0] = k.block[1] = k.block[2] = 1;
  w.add(k, trace::RecType::Kernel);
}

// A rank that completed 4 all-reduces and launched a 5th that a Hang record lists as in flight;
// `ended`: the 5th then completed (its Kernel record and a HangEnd follow).
RankHang read_back(bool ended) {
  std::string bytes;
  TraceWriter w;
  REQUIRE(w.open_memory(&bytes));
  w.meta("rank", "3");
  w.meta("pid", "42");
  for (int i = 0; i < 4; ++i) kernel(w, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 10 + i, 1000 * (i + 1));
  kernel(w, "k_forward", 20, 4500);
  trace::HangRec h{};
  h.ts = 9000, h.since = 5000, h.timeout_ns = 2000, h.hang = 1, h.ops = 1, h.threads = 1;
  w.add(h, trace::RecType::Hang);
  trace::HangItemRec op{};
  op.h = {uint16_t(trace::RecType::HangItem), uint16_t(sizeof op)};
  op.kind = uint8_t(trace::HangItemKind::Op), op.hang = 1, op.corr = 30, op.seq = 5, op.begin = 5000, op.end = 5010;
  op.stream = 2, op.tid = 7, op.op_type = uint16_t(trace::RecType::Kernel);
  op.name_id = w.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  w.append(&op);
  trace::HangItemRec th{};
  th.h = op.h;
  th.kind = uint8_t(trace::HangItemKind::Thread), th.hang = 1, th.begin = 5100, th.tid = 7, th.stream = 2;
  th.name_id = w.intern("cuStreamSynchronize");
  w.append(&th);
  if (ended) {
    kernel(w, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 30, 5000);
    trace::HangEndRec e{};
    e.ts = 12000, e.stuck_ns = 7000, e.hang = 1;
    w.add(e, trace::RecType::HangEnd);
  }
  w.flush();  // a live trace: no End record
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(bytes, "mem", &err));
  RankHang out;
  REQUIRE(read_rank_hang(r, &out, &err));
  return out;
}

}  // namespace

TEST_CASE("hang analysis: a live trace's open hang names the collective in flight and the blocked thread") {
  RankHang h = read_back(false);
  CHECK(h.rank == 3);
  CHECK(h.hangs == 1);
  CHECK(h.hangs_over == 0);
  CHECK(h.collectives == 5);
  CHECK(h.collectives_complete == 4);
  CHECK(h.waiting_seq == 5);
  CHECK(h.waiting_name == "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  REQUIRE(h.in_flight.size() == 1);
  CHECK(h.in_flight[0].corr == 30);
  CHECK(h.in_flight[0].seq == 5);
  REQUIRE(h.blocked.size() == 1);
  CHECK(h.blocked[0].api == "cuStreamSynchronize");
  REQUIRE(h.last_ops.size() == 5);
  CHECK(h.last_ops[0].name == "k_forward");  // newest first
}

TEST_CASE("hang analysis: a hang whose work completed leaves nothing in flight and no collective waited in") {
  RankHang h = read_back(true);
  CHECK(h.hangs == 1);
  CHECK(h.hangs_over == 1);
  CHECK(h.collectives == 5);
  CHECK(h.collectives_complete == 5);
  CHECK(h.waiting_seq == 0);
  CHECK(h.in_flight.empty());
  CHECK(h.blocked.empty());
}

TEST_CASE("hang verdict: the collective most ranks wait in, the ranks that launched fewer, ranks without a trace") {
  std::vector<RankHang> ranks(3);
  for (int i = 0; i < 3; ++i) ranks[size_t(i)].rank = i;
  ranks[0].collectives = 5, ranks[0].waiting_seq = 5, ranks[0].waiting_name = "ncclAllReduce";
  ranks[1].collectives = 4, ranks[1].collectives_complete = 4;  // never reached #5
  ranks[2].collectives = 5, ranks[2].waiting_seq = 5, ranks[2].waiting_name = "ncclAllReduce";
  HangVerdict v = judge_hang(ranks, 4);
  CHECK(v.seq == 5);
  CHECK(v.collective == "ncclAllReduce");
  CHECK(v.waiting == std::vector<size_t>{0, 2});
  REQUIRE(v.culprits.size() == 1);
  CHECK(v.culprits[0].rank_index == 1);
  CHECK(v.culprits[0].reached == 4);
  CHECK(v.missing_ranks == std::vector<int64_t>{3});
  CHECK(v.text == "2 ranks wait in collective #5 (ncclAllReduce); rank 1, rank 3 (no trace) never reached it");

  ranks[1].collectives = 5, ranks[1].waiting_seq = 5, ranks[1].waiting_name = "ncclAllReduce";
  v = judge_hang(ranks, 3);
  CHECK(v.culprits.empty());
  CHECK(v.text.rfind("every rank launched collective #5 (ncclAllReduce)", 0) == 0);

  for (RankHang& r : ranks) r.waiting_seq = 0;
  CHECK(judge_hang(ranks, 3).text == "no rank waits in a collective");
  CHECK(judge_hang(ranks, 3).seq == 0);
}
