// docs/FORMAT.md against trace/format.h: the byte offsets, sizes and total size that the
// document gives for a record type must be those of the struct. Run from the repo root.
#include <cstddef>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include <doctest/doctest.h>

#include "trace/codec.h"
#include "trace/format.h"

using namespace cutrace::trace;

namespace {

struct DocTable {
  size_t record_size = 0;                                   // from "### Name (type N, S bytes)"
  std::map<std::string, std::pair<size_t, size_t>> fields;  // `field` -> offset, size
};

// The section "### <name> (type <t>, <size> bytes)" and its table rows "| off | size | `f` |".
DocTable doc_table(const std::string& name, int type) {
  std::ifstream in("docs/FORMAT.md");
  REQUIRE_MESSAGE(in.good(), "docs/FORMAT.md missing: run the tests from the repo root");
  std::string heading = "### " + name + " (type " + std::to_string(type) + ", ";
  DocTable t;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      if (inside) break;
      if (line.rfind(heading, 0) == 0) {
        inside = true;
        t.record_size = std::stoul(line.substr(heading.size()));
      }
      continue;
    }
    if (!inside || line.rfind("|", 0) != 0) continue;
    std::stringstream ss(line.substr(1));
    std::string off, size, field;
    std::getline(ss, off, '|');
    std::getline(ss, size, '|');
    std::getline(ss, field, '|');
    size_t a = field.find('`'), b = field.rfind('`');
    if (a == std::string::npos || b <= a) continue;
    try {
      t.fields[field.substr(a + 1, b - a - 1)] = {std::stoul(off), std::stoul(size)};
    } catch (const std::exception&) {  // the header and rule rows
    }
  }
  REQUIRE_MESSAGE(inside, "no section '" << heading << "...' in docs/FORMAT.md");
  return t;
}

#define FIELD(S, f)                      \
  {                                      \
#f, { offsetof(S, f), sizeof(S::f) } \
  }

}  // namespace

// offsetof on packed standard-layout structs is fine; GCC warns only for non-standard-layout.
TEST_CASE("FORMAT.md describes RangeRec and MarkRec as format.h defines them") {
  DocTable range = doc_table("Range", int(RecType::Range));
  CHECK(range.record_size == sizeof(RangeRec));
  std::map<std::string, std::pair<size_t, size_t>> want_range = {
      FIELD(RangeRec, cpu_begin), FIELD(RangeRec, cpu_end),  FIELD(RangeRec, gpu_start), FIELD(RangeRec, gpu_end),
      FIELD(RangeRec, id),        FIELD(RangeRec, tid),      FIELD(RangeRec, end_tid),   FIELD(RangeRec, name_id),
      FIELD(RangeRec, domain_id), FIELD(RangeRec, category), FIELD(RangeRec, color),     FIELD(RangeRec, gpu_ops),
      FIELD(RangeRec, depth),     FIELD(RangeRec, kind),     FIELD(RangeRec, source)};
  CHECK(range.fields == want_range);

  DocTable mark = doc_table("Mark", int(RecType::Mark));
  CHECK(mark.record_size == sizeof(MarkRec));
  std::map<std::string, std::pair<size_t, size_t>> want_mark = {
      FIELD(MarkRec, ts),       FIELD(MarkRec, tid),   FIELD(MarkRec, name_id), FIELD(MarkRec, domain_id),
      FIELD(MarkRec, category), FIELD(MarkRec, color), FIELD(MarkRec, source),  FIELD(MarkRec, pad)};
  CHECK(mark.fields == want_mark);
}

TEST_CASE("FORMAT.md describes the Loss record as format.h defines it") {
  DocTable loss = doc_table("Loss", int(RecType::Loss));
  CHECK(loss.record_size == sizeof(LossRec));
  std::map<std::string, std::pair<size_t, size_t>> want = {FIELD(LossRec, begin_ns), FIELD(LossRec, end_ns),
                                                           FIELD(LossRec, tid),      FIELD(LossRec, reason),
                                                           FIELD(LossRec, pad),      FIELD(LossRec, count)};
  CHECK(loss.fields == want);
}

TEST_CASE("FORMAT.md describes the call-stack records (Module, Stack, OpStack) as format.h defines them") {
  DocTable module = doc_table("Module", int(RecType::Module));
  CHECK(module.record_size == sizeof(ModuleRec));
  std::map<std::string, std::pair<size_t, size_t>> want_module = {
      FIELD(ModuleRec, module), FIELD(ModuleRec, path_id),     FIELD(ModuleRec, base),
      FIELD(ModuleRec, size),   FIELD(ModuleRec, build_id_id), FIELD(ModuleRec, pad)};
  CHECK(module.fields == want_module);

  DocTable stack = doc_table("Stack", int(RecType::Stack));
  CHECK(stack.record_size == sizeof(StackRec));  // "12 + 12 x depth": the fixed part
  std::map<std::string, std::pair<size_t, size_t>> want_stack = {FIELD(StackRec, stack), FIELD(StackRec, depth),
                                                                 FIELD(StackRec, pad)};
  CHECK(stack.fields == want_stack);
  CHECK(sizeof(StackFrame) == 12);
  CHECK(offsetof(StackFrame, offset) == 4);

  DocTable op = doc_table("OpStack", int(RecType::OpStack));
  CHECK(op.record_size == sizeof(OpStackRec));
  std::map<std::string, std::pair<size_t, size_t>> want_op = {FIELD(OpStackRec, corr), FIELD(OpStackRec, stack),
                                                              FIELD(OpStackRec, op_type), FIELD(OpStackRec, pad)};
  CHECK(op.fields == want_op);
}

#define FIELD_AS(S, f, doc)               \
  {                                       \
    doc, { offsetof(S, f), sizeof(S::f) } \
  }

TEST_CASE("FORMAT.md describes the operation and KernelConfig records as format.h defines them") {
  using Fields = std::map<std::string, std::pair<size_t, size_t>>;
  DocTable kernel = doc_table("Kernel", int(RecType::Kernel));
  CHECK(kernel.record_size == sizeof(KernelRec));
  CHECK(kernel.fields == Fields{FIELD(KernelRec, op), FIELD(KernelRec, name_id), FIELD_AS(KernelRec, grid, "grid[3]"),
                                FIELD_AS(KernelRec, block, "block[3]"), FIELD(KernelRec, dyn_smem),
                                FIELD(KernelRec, static_smem), FIELD(KernelRec, regs), FIELD(KernelRec, kind),
                                FIELD(KernelRec, pad), FIELD(KernelRec, graph_id)});

  DocTable config = doc_table("KernelConfig", int(RecType::KernelConfig));
  CHECK(config.record_size == sizeof(KernelConfigRec));
  CHECK(config.fields ==
        Fields{FIELD(KernelConfigRec, id), FIELD(KernelConfigRec, name_id), FIELD_AS(KernelConfigRec, grid, "grid[3]"),
               FIELD_AS(KernelConfigRec, block, "block[3]"), FIELD(KernelConfigRec, dyn_smem),
               FIELD(KernelConfigRec, static_smem), FIELD(KernelConfigRec, regs), FIELD(KernelConfigRec, kind),
               FIELD(KernelConfigRec, pad), FIELD(KernelConfigRec, graph_id)});
  // The config is KernelRec's tail, byte for byte: the packed kernel copies it back there.
  CHECK(sizeof(KernelConfigRec) - offsetof(KernelConfigRec, name_id) ==
        sizeof(KernelRec) - offsetof(KernelRec, name_id));

  DocTable memcpy_doc = doc_table("Memcpy", int(RecType::Memcpy));
  CHECK(memcpy_doc.record_size == sizeof(MemcpyRec));
  CHECK(memcpy_doc.fields == Fields{FIELD(MemcpyRec, op), FIELD(MemcpyRec, bytes), FIELD(MemcpyRec, copy_kind),
                                    FIELD(MemcpyRec, src_kind), FIELD(MemcpyRec, dst_kind), FIELD(MemcpyRec, pad),
                                    FIELD(MemcpyRec, src_device), FIELD(MemcpyRec, dst_device)});
  DocTable sync = doc_table("Sync", int(RecType::Sync));
  CHECK(sync.record_size == sizeof(SyncRec));
  CHECK(sync.fields == Fields{FIELD(SyncRec, cpu_begin), FIELD(SyncRec, cpu_end), FIELD(SyncRec, event),
                              FIELD(SyncRec, tid), FIELD(SyncRec, stream), FIELD(SyncRec, device), FIELD(SyncRec, api),
                              FIELD(SyncRec, result), FIELD(SyncRec, kind), FIELD(SyncRec, pad), FIELD(SyncRec, corr)});
  DocTable memory = doc_table("Memory", int(RecType::Memory));
  CHECK(memory.record_size == sizeof(MemoryRec));
  CHECK(memory.fields == Fields{FIELD(MemoryRec, cpu_begin), FIELD(MemoryRec, cpu_end), FIELD(MemoryRec, address),
                                FIELD(MemoryRec, bytes), FIELD(MemoryRec, tid), FIELD(MemoryRec, stream),
                                FIELD(MemoryRec, device), FIELD(MemoryRec, api), FIELD(MemoryRec, result),
                                FIELD(MemoryRec, op), FIELD(MemoryRec, mem_kind), FIELD(MemoryRec, pad)});
  DocTable api = doc_table("Api", int(RecType::Api));
  CHECK(api.record_size == sizeof(ApiRec));
  CHECK(api.fields == Fields{FIELD(ApiRec, cpu_begin), FIELD(ApiRec, cpu_end), FIELD(ApiRec, corr), FIELD(ApiRec, arg),
                             FIELD(ApiRec, tid), FIELD(ApiRec, stream), FIELD(ApiRec, api), FIELD(ApiRec, device),
                             FIELD(ApiRec, result)});
}

// The rows "| n | `name` | ..." of the section whose heading starts with `heading`.
static std::map<int, std::string> doc_numbered_rows(const std::string& heading, const std::string& table_head) {
  std::ifstream in("docs/FORMAT.md");
  std::map<int, std::string> rows;
  std::string line;
  bool inside = false, in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("### ", 0) == 0) {
      if (inside) break;
      inside = line.rfind(heading, 0) == 0;
      continue;
    }
    if (!inside) continue;
    if (line.rfind(table_head, 0) == 0) {
      in_table = true;
      continue;
    }
    if (in_table && line.rfind("|", 0) != 0) in_table = false;
    if (!in_table) continue;
    std::stringstream ss(line.substr(1));
    std::string num, name;
    std::getline(ss, num, '|');
    std::getline(ss, name, '|');
    size_t a = name.find('`'), b = name.rfind('`');
    try {
      rows[std::stoi(num)] = a != std::string::npos && b > a ? name.substr(a + 1, b - a - 1) : name;
    } catch (const std::exception&) {  // the rule row
    }
  }
  return rows;
}

TEST_CASE("FORMAT.md lists the packed columns and tags in the codec's order") {
  std::map<int, std::string> columns = doc_numbered_rows("### Packed payload", "| # | Column");
  REQUIRE(columns.size() == kColumnCount);
  for (int c = 0; c < kColumnCount; ++c) CHECK(columns[c] == cutrace::codec::column_name(c));

  std::map<int, std::string> tags = doc_numbered_rows("### Packed payload", "| Tag | Record");
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(' '));
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
  };
  std::map<int, std::string> got;
  for (auto& [t, name] : tags) got[t] = trim(name);
  CHECK(got == std::map<int, std::string>{{int(RecType::Kernel), "Kernel"},
                                          {int(RecType::Memcpy), "Memcpy"},
                                          {int(RecType::Memset), "Memset"},
                                          {int(RecType::Sync), "Sync"},
                                          {int(RecType::Memory), "Memory"},
                                          {int(RecType::Api), "Api"}});

  std::ifstream in("docs/FORMAT.md");
  std::string first, all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string title = "# cutrace trace file format, version " + std::to_string(kVersionMajor) + "." +
                      std::to_string(kVersionMinor) + "\n";
  CHECK(all.rfind(title, 0) == 0);
  CHECK(all.find("`ncols` is " + std::to_string(kColumnCount) + " in " + std::to_string(kVersionMajor) + "." +
                 std::to_string(kVersionMinor)) != std::string::npos);
}

TEST_CASE("FORMAT.md describes the NVTX Payload record as format.h defines it") {
  DocTable p = doc_table("Payload", int(RecType::Payload));
  CHECK(p.record_size == sizeof(PayloadRec));
  std::map<std::string, std::pair<size_t, size_t>> want = {
      FIELD(PayloadRec, target), FIELD(PayloadRec, ts),  FIELD(PayloadRec, tid), FIELD(PayloadRec, of),
      FIELD(PayloadRec, type),   FIELD(PayloadRec, pad), FIELD(PayloadRec, bits)};
  CHECK(p.fields == want);
}

TEST_CASE("FORMAT.md describes the hang watchdog's records (Hang, HangItem, HangEnd) as format.h defines them") {
  DocTable h = doc_table("Hang", int(RecType::Hang));
  CHECK(h.record_size == sizeof(HangRec));
  std::map<std::string, std::pair<size_t, size_t>> want_h = {FIELD(HangRec, ts),
                                                             FIELD(HangRec, since),
                                                             FIELD(HangRec, timeout_ns),
                                                             FIELD(HangRec, hang),
                                                             FIELD(HangRec, ops),
                                                             FIELD(HangRec, threads),
                                                             FIELD(HangRec, report_id),
                                                             FIELD(HangRec, collectives_launched),
                                                             FIELD(HangRec, collectives_done)};
  CHECK(h.fields == want_h);
  DocTable i = doc_table("HangItem", int(RecType::HangItem));
  CHECK(i.record_size == sizeof(HangItemRec));
  std::map<std::string, std::pair<size_t, size_t>> want_i = {
      FIELD(HangItemRec, begin), FIELD(HangItemRec, end),       FIELD(HangItemRec, corr),
      FIELD(HangItemRec, seq),   FIELD(HangItemRec, event),     FIELD(HangItemRec, hang),
      FIELD(HangItemRec, tid),   FIELD(HangItemRec, stream),    FIELD(HangItemRec, name_id),
      FIELD(HangItemRec, stack), FIELD(HangItemRec, op_type),   FIELD(HangItemRec, device),
      FIELD(HangItemRec, kind),  FIELD(HangItemRec, sync_kind), FIELD(HangItemRec, pad)};
  CHECK(i.fields == want_i);
  DocTable e = doc_table("HangEnd", int(RecType::HangEnd));
  CHECK(e.record_size == sizeof(HangEndRec));
  std::map<std::string, std::pair<size_t, size_t>> want_e = {FIELD(HangEndRec, ts), FIELD(HangEndRec, stuck_ns),
                                                             FIELD(HangEndRec, hang), FIELD(HangEndRec, pad)};
  CHECK(e.fields == want_e);
}

TEST_CASE(
    "FORMAT.md describes the CPU counter records (CounterDef, CounterSample, CounterMissing) as format.h defines "
    "them") {
  DocTable def = doc_table("CounterDef", int(RecType::CounterDef));
  CHECK(def.record_size == sizeof(CounterDefRec));
  std::map<std::string, std::pair<size_t, size_t>> want_def = {
      FIELD(CounterDefRec, counter), FIELD(CounterDefRec, scope),   FIELD(CounterDefRec, unit),
      FIELD(CounterDefRec, cpu),     FIELD(CounterDefRec, name_id), FIELD(CounterDefRec, source),
      FIELD(CounterDefRec, pad)};
  CHECK(def.fields == want_def);
  DocTable sample = doc_table("CounterSample", int(RecType::CounterSample));
  CHECK(sample.record_size == sizeof(CounterSampleRec));
  std::map<std::string, std::pair<size_t, size_t>> want_sample = {
      FIELD(CounterSampleRec, ts), FIELD(CounterSampleRec, interval_ns), FIELD(CounterSampleRec, count),
      FIELD(CounterSampleRec, pad)};
  CHECK(sample.fields == want_sample);
  DocTable miss = doc_table("CounterMissing", int(RecType::CounterMissing));
  CHECK(miss.record_size == sizeof(CounterMissingRec));
  std::map<std::string, std::pair<size_t, size_t>> want_miss = {
      FIELD(CounterMissingRec, name_id), FIELD(CounterMissingRec, reason_id), FIELD(CounterMissingRec, err),
      FIELD(CounterMissingRec, scope), FIELD(CounterMissingRec, pad)};
  CHECK(miss.fields == want_miss);
}

TEST_CASE("FORMAT.md describes the Python stack records (PyCode, PyStack) as format.h defines them") {
  DocTable code = doc_table("PyCode", int(RecType::PyCode));
  CHECK(code.record_size == sizeof(PyCodeRec));
  std::map<std::string, std::pair<size_t, size_t>> want_code = {
      FIELD(PyCodeRec, code), FIELD(PyCodeRec, file_id), FIELD(PyCodeRec, name_id), FIELD(PyCodeRec, qualname_id),
      FIELD(PyCodeRec, first_line)};
  CHECK(code.fields == want_code);
  DocTable stack = doc_table("PyStack", int(RecType::PyStack));
  CHECK(stack.record_size == sizeof(PyStackRec));  // the fixed part
  std::map<std::string, std::pair<size_t, size_t>> want_stack = {FIELD(PyStackRec, stack), FIELD(PyStackRec, py_depth),
                                                                 FIELD(PyStackRec, depth)};
  CHECK(stack.fields == want_stack);
  CHECK(sizeof(PyFrame) == 8);
}
