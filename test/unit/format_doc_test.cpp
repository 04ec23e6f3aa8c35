// docs/FORMAT.md against collector/format.h: the byte offsets, sizes and total size that the
// document gives for a record type must be those of the struct. Run from the repo root.
#include <cstddef>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include <doctest/doctest.h>

#include "collector/format.h"

using namespace cutrace::fmt;

namespace {

struct DocTable {
  size_t record_size = 0;                                  // from "### Name (type N, S bytes)"
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

#define FIELD(S, f) \
  { #f, {offsetof(S, f), sizeof(S::f)} }

}  // namespace

// offsetof on packed standard-layout structs is fine; GCC warns only for non-standard-layout.
TEST_CASE("FORMAT.md describes RangeRec and MarkRec as format.h defines them") {
  DocTable range = doc_table("Range", int(RecType::Range));
  CHECK(range.record_size == sizeof(RangeRec));
  std::map<std::string, std::pair<size_t, size_t>> want_range = {
      FIELD(RangeRec, cpu_begin), FIELD(RangeRec, cpu_end),   FIELD(RangeRec, gpu_start),
      FIELD(RangeRec, gpu_end),   FIELD(RangeRec, id),        FIELD(RangeRec, tid),
      FIELD(RangeRec, end_tid),   FIELD(RangeRec, name_id),   FIELD(RangeRec, domain_id),
      FIELD(RangeRec, category),  FIELD(RangeRec, color),     FIELD(RangeRec, gpu_ops),
      FIELD(RangeRec, depth),     FIELD(RangeRec, kind),      FIELD(RangeRec, source)};
  CHECK(range.fields == want_range);

  DocTable mark = doc_table("Mark", int(RecType::Mark));
  CHECK(mark.record_size == sizeof(MarkRec));
  std::map<std::string, std::pair<size_t, size_t>> want_mark = {
      FIELD(MarkRec, ts),       FIELD(MarkRec, tid),   FIELD(MarkRec, name_id),
      FIELD(MarkRec, domain_id), FIELD(MarkRec, category), FIELD(MarkRec, color),
      FIELD(MarkRec, source),   FIELD(MarkRec, pad)};
  CHECK(mark.fields == want_mark);
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
  std::map<std::string, std::pair<size_t, size_t>> want_stack = {
      FIELD(StackRec, stack), FIELD(StackRec, depth), FIELD(StackRec, pad)};
  CHECK(stack.fields == want_stack);
  CHECK(sizeof(StackFrame) == 12);
  CHECK(offsetof(StackFrame, offset) == 4);

  DocTable op = doc_table("OpStack", int(RecType::OpStack));
  CHECK(op.record_size == sizeof(OpStackRec));
  std::map<std::string, std::pair<size_t, size_t>> want_op = {
      FIELD(OpStackRec, corr), FIELD(OpStackRec, stack), FIELD(OpStackRec, op_type), FIELD(OpStackRec, pad)};
  CHECK(op.fields == want_op);
}
