// Call stacks: interning on the collector side (collector/stacks.cpp: module map, one Module and
// one Stack record per distinct module/stack, the shim's frames removed, depth capped, modules
// dlopen'ed later found) and symbolisation in the tools (tools/analysis/stacks.cpp: ELF symbols of this
// very test binary, demangled; build-id mismatch refused).
#include <dlfcn.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "collector/stacks.h"
#include "tools/analysis/stacks.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace stacks_test_ns {
// Real functions of this binary whose return addresses the tests fabricate (the address of the
// function + 8: inside it, past its first instruction).
// (volatile: long enough that +8 stays inside the function)
__attribute__((noinline)) int target_one(int x) {
  volatile int v = x;
  for (int i = 0; i < 3; ++i) v = v * 3 + 1;
  return v;
}
__attribute__((noinline)) int target_two(int x) {
  volatile int v = x;
  for (int i = 0; i < 3; ++i) v = v * 5 + 2;
  return v;
}
}  // namespace stacks_test_ns

namespace {

uint64_t inside(int (*f)(int)) { return reinterpret_cast<uint64_t>(f) + 8; }

struct Written {
  std::string bytes;
  std::vector<trace::ModuleRec> modules;
  std::vector<uint32_t> stack_ids;
  StackTable table;
};

// Reads back what a writer produced: Module and Stack records, in order.
void read_back(Written& w) {
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(w.bytes, "mem", &err));
  r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::Module) w.modules.push_back(rec.as<trace::ModuleRec>());
    if (rec.type() == trace::RecType::Stack)
      w.stack_ids.push_back(+rec.as<trace::StackRec>().stack);  // +: a copy of a packed field
    w.table.absorb(rec, r);
  });
}

}  // namespace

TEST_CASE("a call stack is interned once per file: same PCs, same id, one Stack record") {
  Written out;
  {
    TraceWriter w;
    REQUIRE(w.open_memory(&out.bytes));
    StackInterner in(w);
    uint64_t a[] = {inside(stacks_test_ns::target_one), inside(stacks_test_ns::target_two)};
    uint64_t b[] = {inside(stacks_test_ns::target_two)};
    auto keep = [](uint64_t) { return false; };
    uint32_t id1 = in.intern(a, 2, keep);
    uint32_t id2 = in.intern(b, 1, keep);
    uint32_t id3 = in.intern(a, 2, keep);
    CHECK(id1 == 1);
    CHECK(id2 == 2);
    CHECK(id3 == id1);
    CHECK(in.stacks() == 2);
    CHECK(in.modules().refreshes() == 1);  // one snapshot served every PC of this binary
    REQUIRE(w.close(0, trace::kEndClean));
  }
  read_back(out);
  CHECK(out.stack_ids == std::vector<uint32_t>{1, 2});
  REQUIRE(out.modules.size() == 1);  // both functions live in this test binary
  const ModuleInfo* m = out.table.module(out.modules[0].module);
  REQUIRE(m != nullptr);
  char exe[4096] = {};
  REQUIRE(readlink("/proc/self/exe", exe, sizeof exe - 1) > 0);
  CHECK(m->path == exe);
  CHECK(m->build_id.size() >= 16);  // Debian's gcc links with --build-id
  const auto* frames = out.table.stack(1);
  REQUIRE(frames != nullptr);
  REQUIRE(frames->size() == 2);
  CHECK(+(*frames)[0].module == +out.modules[0].module);  // +: CHECK binds references
  CHECK(+(*frames)[0].offset == inside(stacks_test_ns::target_one) - out.modules[0].base);
}

TEST_CASE("the shim's own leading frames are removed and at most 24 frames are kept") {
  std::string bytes;
  TraceWriter w;
  REQUIRE(w.open_memory(&bytes));
  StackInterner in(w);
  uint64_t shim_pc = 0x1000;  // stands for the shim's code
  std::vector<uint64_t> pcs = {shim_pc, shim_pc};
  for (int i = 0; i < 30; ++i) pcs.push_back(inside(i % 2 ? stacks_test_ns::target_one : stacks_test_ns::target_two));
  uint32_t id = in.intern(pcs.data(), uint32_t(pcs.size()), [&](uint64_t pc) { return pc == shim_pc; });
  REQUIRE(w.close(0, trace::kEndClean));
  Written out;
  out.bytes = bytes;
  read_back(out);
  const auto* frames = out.table.stack(id);
  REQUIRE(frames != nullptr);
  CHECK(frames->size() == trace::kMaxStackFrames);
  for (const trace::StackFrame& f : *frames) CHECK(+f.module != 0);  // no shim frame left

  uint64_t only_shim[] = {shim_pc};
  CHECK(in.intern(only_shim, 1, [&](uint64_t pc) { return pc == shim_pc; }) == 0);
}

TEST_CASE("a library dlopen'ed after the first snapshot is resolved to its module") {
  std::string bytes;
  TraceWriter w;
  REQUIRE(w.open_memory(&bytes));
  StackInterner in(w);
  uint64_t mine[] = {inside(stacks_test_ns::target_one)};
  in.intern(mine, 1, [](uint64_t) { return false; });      // first snapshot, before the dlopen
  void* h = dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL);  // libelf-dev's runtime: not loaded yet
  REQUIRE_MESSAGE(h != nullptr, dlerror());
  void* fn = dlsym(h, "elf_version");
  REQUIRE(fn != nullptr);
  in.modules().new_cycle();  // the collector's next drain
  uint64_t theirs[] = {reinterpret_cast<uint64_t>(fn) + 4};
  uint32_t id = in.intern(theirs, 1, [](uint64_t) { return false; });
  REQUIRE(w.close(0, trace::kEndClean));
  Written out;
  out.bytes = bytes;
  read_back(out);
  const auto* frames = out.table.stack(id);
  REQUIRE(frames != nullptr);
  REQUIRE(frames->size() == 1);
  const ModuleInfo* m = out.table.module((*frames)[0].module);
  REQUIRE(m != nullptr);
  CHECK(m->path.find("libelf") != std::string::npos);
  Symbolizer sym;
  CHECK(sym.frame(out.table, (*frames)[0]).function == "elf_version");  // from its .dynsym
  dlclose(h);
}

TEST_CASE("symbolisation names the demangled function that contains each return address") {
  Written out;
  {
    TraceWriter w;
    REQUIRE(w.open_memory(&out.bytes));
    StackInterner in(w);
    uint64_t pcs[] = {inside(stacks_test_ns::target_two), inside(stacks_test_ns::target_one), 0x10};
    in.intern(pcs, 3, [](uint64_t) { return false; });
    REQUIRE(w.close(0, trace::kEndClean));
  }
  read_back(out);
  Symbolizer sym;
  std::vector<SymFrame> frames = sym.stack(out.table, 1);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].function == "stacks_test_ns::target_two(int)");
  CHECK(frames[1].function == "stacks_test_ns::target_one(int)");
  CHECK(frames[2].module.empty());  // in no module: the raw PC is kept
  CHECK(frames[2].offset == 0x10);
  CHECK(frame_text(frames[2]) == "0x10");
  std::string text = frame_text(frames[0]);
  CHECK(text.find("stacks_test_ns::target_two(int) (") != std::string::npos);
  CHECK(text.find("+0x") != std::string::npos);
  CHECK(sym.problems().empty());
}

TEST_CASE("a module whose file changed since the run (other build-id) is not symbolised") {
  Written out;
  {
    TraceWriter w;
    REQUIRE(w.open_memory(&out.bytes));
    StackInterner in(w);
    uint64_t pcs[] = {inside(stacks_test_ns::target_one)};
    in.intern(pcs, 1, [](uint64_t) { return false; });
    REQUIRE(w.close(0, trace::kEndClean));
  }
  // The same records, but the Module record's build-id string says another build.
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(out.bytes, "mem", &err));
  StackTable table;
  std::string fake_id = "00112233445566778899aabbccddeeff00112233";
  r.read([&](const Record& rec) { table.absorb(rec, r); });
  REQUIRE(table.module(1) != nullptr);
  std::string real_id = table.module(1)->build_id;
  // A second trace with the same module and frame, and another build-id.
  std::string bytes2;
  {
    TraceWriter w;
    REQUIRE(w.open_memory(&bytes2));
    trace::ModuleRec m{};
    m.module = 1;
    m.path_id = w.intern(table.module(1)->path);
    m.base = table.module(1)->base;
    m.build_id_id = w.intern(fake_id);
    w.add(m, trace::RecType::Module);
    trace::StackRec s{};
    s.h.type = uint16_t(trace::RecType::Stack);
    s.stack = 1;
    s.depth = 1;
    trace::StackFrame f = (*table.stack(1))[0];
    w.append_var(&s, sizeof s, &f, sizeof f);
    REQUIRE(w.close(0, trace::kEndClean));
  }
  Written changed;
  changed.bytes = bytes2;
  read_back(changed);
  Symbolizer sym;
  std::vector<SymFrame> frames = sym.stack(changed.table, 1);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function.empty());
  CHECK(frames[0].module == table.module(1)->path);
  REQUIRE(sym.problems().size() == 1);
  CHECK(sym.problems()[0].find("differs from the recorded " + fake_id) != std::string::npos);
  CHECK(real_id != fake_id);
}

TEST_CASE("find_symbol: a sized symbol must contain the address, an unsized one is the nearest below") {
  std::vector<ElfSymbol> syms = {{0x100, 0x10, "a"}, {0x200, 0, "b"}, {0x300, 0x20, "c"}};
  CHECK(find_symbol(syms, 0x50) == nullptr);
  CHECK(find_symbol(syms, 0x100)->name == "a");
  CHECK(find_symbol(syms, 0x10f)->name == "a");
  CHECK(find_symbol(syms, 0x110) == nullptr);  // past a's end, before b
  CHECK(find_symbol(syms, 0x2ff)->name == "b");
  CHECK(find_symbol(syms, 0x31f)->name == "c");
  CHECK(find_symbol(syms, 0x320) == nullptr);
}
