// Python stacks on the collector side and in the tools: line tables decoded as CPython does
// (tables and lines from CPython 3.11.7's and 3.10.13's own co_linetable and co_lines() for one
// function), code objects read from memory laid out as 3.11 lays them out (fake objects here),
// an unmapped code object read without a crash, PyStack records read back with their Python
// frames first, and the call-site filter of the tools.
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "collector/py_code.h"
#include "collector/stacks.h"
#include "runtime/py_layout.h"
#include "tools/analysis/stacks.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace {

std::string bytes(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s.push_back(char(b));
  return s;
}

// def f(a):                          line 1
//     x = a + 1                      2
//                                    3
//     if x:                          4
//         y = [i for i in range(3)]  5
//     return (x,                     6
//             y)                     7
const std::string k311Table =
    bytes({128, 0,  216, 8,  9,   136, 65, 137, 5,  128, 65,  224, 7, 8,   240, 0,   1,   5,  34, 216,
           12,  33, 208, 12, 33,  157, 5,  152, 97, 153, 8,   156, 8, 208, 12,  33,  209, 12, 33, 212,
           12,  33, 136, 1,  216, 12,  13, 216, 12, 13,  240, 3,   1, 12,  15,  240, 0,   1,  5,  15});
const std::string k310Table = bytes({8, 1, 4, 2, 18, 1, 2, 1, 2, 1, 4, 255});

// A fake CPython 3.11 object graph: type objects are just distinct addresses.
struct FakeObjects {
  alignas(8) char code_type[64] = {}, str_type[64] = {}, bytes_type[64] = {};
  std::vector<std::vector<char>> blocks;
  char* alloc(size_t n) {
    blocks.emplace_back(n + 16, 0);
    return blocks.back().data();
  }
  void set_type(char* o, const void* type) { memcpy(o + 8, &type, 8); }
  uint64_t str(const std::string& s) {  // compact ASCII
    const PyLayout& l = *builtin_py_layout(11);
    char* o = alloc(l.ascii_size + s.size() + 1);
    set_type(o, str_type);
    int64_t len = int64_t(s.size());
    uint32_t state = (1u << 2) | (1u << 5) | (1u << 6);  // kind 1, compact, ascii
    memcpy(o + l.str_length, &len, 8);
    memcpy(o + l.str_state, &state, 4);
    memcpy(o + l.ascii_size, s.data(), s.size());
    return reinterpret_cast<uint64_t>(o);
  }
  uint64_t byt(const std::string& s) {
    char* o = alloc(32 + s.size() + 1);
    set_type(o, bytes_type);
    int64_t len = int64_t(s.size());
    memcpy(o + 16, &len, 8);
    memcpy(o + 32, s.data(), s.size());
    return reinterpret_cast<uint64_t>(o);
  }
  uint64_t code(const std::string& file, const std::string& name, const std::string& qual, uint32_t first,
                const std::string& table) {
    const PyLayout& l = *builtin_py_layout(11);
    char* o = alloc(l.co_code + 64);
    set_type(o, code_type);
    uint64_t f = str(file), n = str(name), q = str(qual), t = byt(table);
    memcpy(o + l.co_filename, &f, 8);
    memcpy(o + l.co_name, &n, 8);
    memcpy(o + l.co_qualname, &q, 8);
    memcpy(o + l.co_linetable, &t, 8);
    memcpy(o + l.co_firstlineno, &first, 4);
    return reinterpret_cast<uint64_t>(o);
  }
  void install() {
    g_pyrt.layout = builtin_py_layout(11);
    g_pyrt.code_type = code_type;
    g_pyrt.str_type = str_type;
    g_pyrt.bytes_type = bytes_type;
  }
  ~FakeObjects() { g_pyrt = PyRuntimeInfo{}; }
};

}  // namespace

TEST_CASE("py_line decodes 3.11's location table and 3.10's line pairs as co_lines() does") {
  // (code unit, line) from co_lines() of the function above.
  std::vector<std::pair<int, uint32_t>> want311 = {{0, 1},  {1, 2},  {5, 2},  {6, 4},  {7, 4}, {8, 5},
                                                   {32, 5}, {33, 6}, {34, 7}, {35, 6}, {36, 6}};
  for (auto [unit, line] : want311) CHECK_MESSAGE(py_line(11, k311Table, 1, unit) == line, "3.11 unit " << unit);
  std::vector<std::pair<int, uint32_t>> want310 = {{0, 2},  {3, 2},  {4, 4},  {5, 4},  {6, 5},
                                                   {14, 5}, {15, 6}, {16, 7}, {17, 6}, {18, 6}};
  for (auto [unit, line] : want310) CHECK_MESSAGE(py_line(10, k310Table, 1, unit) == line, "3.10 unit " << unit);
  CHECK(py_line(11, k311Table, 1, 999) == 0);  // past the table: unknown
  CHECK(py_line(11, k311Table, 7, -1) == 7);   // not started: the first line
}

TEST_CASE("code objects are named once and their frames' lines resolved; PyStack reads back Python frames first") {
  FakeObjects fake;
  fake.install();
  uint64_t step = fake.code("/home/u/train.py", "step", "Model.step", 1, k311Table);
  uint64_t mainc = fake.code("/home/u/train.py", "<module>", "<module>", 1, k311Table);
  std::string out;
  uint32_t id = 0, id_again = 0;
  {
    TraceWriter w;
    REQUIRE(w.open_memory(&out));
    StackInterner in(w);
    PyRawFrame py[] = {{step, 33, 1}, {mainc, 6, 1}};
    uint64_t pcs[] = {0x1234};
    id = in.intern(
        pcs, 1, [](uint64_t) { return false; }, py, 2);
    id_again = in.intern(
        pcs, 1, [](uint64_t) { return false; }, py, 2);
    REQUIRE(w.close(0, trace::kEndClean));
  }
  CHECK(id == id_again);
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(out, "mem", &err));
  StackTable t;
  int codes = 0, pystacks = 0;
  r.read([&](const Record& rec) {
    codes += rec.type() == trace::RecType::PyCode;
    pystacks += rec.type() == trace::RecType::PyStack;
    t.absorb(rec, r);
  });
  CHECK(codes == 2);
  CHECK(pystacks == 1);
  Symbolizer sym;
  std::vector<SymFrame> frames = sym.stack(t, id);
  REQUIRE(frames.size() == 3);
  CHECK(frame_text(frames[0]) == "train.py:6 in Model.step");
  CHECK(frame_text(frames[1]) == "train.py:4 in <module>");
  CHECK(frames[0].module == "/home/u/train.py");
  CHECK_FALSE(frames[2].python);
  CHECK(frame_text(frames[2]) == "0x1234");
}

TEST_CASE("a code object that is no longer mapped, or no longer the same, is named '?' without a crash") {
  FakeObjects fake;
  fake.install();
  long page = sysconf(_SC_PAGESIZE);
  void* m = mmap(nullptr, size_t(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  munmap(m, size_t(page));
  uint64_t reused = fake.code("/x.py", "f", "f", 40, k311Table);
  std::string out;
  TraceWriter w;
  REQUIRE(w.open_memory(&out));
  PyCodeTable codes(w);
  trace::PyFrame gone = codes.frame({reinterpret_cast<uint64_t>(m), 3, 10});
  trace::PyFrame other = codes.frame({reused, 3, 10});  // first line 40 there, 10 when seen
  CHECK(gone.line == 0);
  CHECK(other.line == 0);
  REQUIRE(w.close(0, trace::kEndClean));
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(out, "mem", &err));
  std::vector<std::string> files;
  r.read([&](const Record& rec) {
    if (rec.type() == trace::RecType::PyCode) files.emplace_back(r.str(rec.as<trace::PyCodeRec>().file_id));
  });
  CHECK(files == std::vector<std::string>{"?", "?"});
}

TEST_CASE("the Python call site is the innermost frame outside the skipped packages") {
  CHECK(py_frame_in_packages("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", kDefaultPySkip));
  CHECK(py_frame_in_packages("/usr/lib/python3.11/threading.py", kDefaultPySkip));
  CHECK(py_frame_in_packages("/root/.pyenv/versions/3.12.1/lib/python3.12/asyncio/events.py", kDefaultPySkip));
  CHECK_FALSE(py_frame_in_packages("/usr/lib/python3/dist-packages/mylib/x.py", kDefaultPySkip));
  CHECK_FALSE(py_frame_in_packages("/venv/lib/python3.11/site-packages/mylib/x.py", kDefaultPySkip));
  CHECK_FALSE(py_frame_in_packages("/home/u/train.py", kDefaultPySkip));
  CHECK_FALSE(py_frame_in_packages("<string>", kDefaultPySkip));
  CHECK_FALSE(py_frame_in_packages("/home/u/torchvision_tools.py", kDefaultPySkip));  // a component, not a prefix
  CHECK(py_frame_in_packages("/home/u/fw/launch.py", "fw"));
}
