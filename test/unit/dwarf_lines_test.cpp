// Native source lines from DWARF (tools/analysis/dwarf_lines.cpp): frames of this very test
// binary (built with -g) get the file and line of the code, a file without DWARF gives none, and
// copies of this binary with their DWARF sections overwritten or cut short give no crash.
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "collector/stacks.h"
#include "tools/analysis/dwarf_lines.h"
#include "tools/analysis/stacks.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace cutrace;

namespace dwarf_test_ns {
// On one line (kProbeLine): every instruction of it has that line, whatever the optimiser does.
// clang-format off
__attribute__((noinline)) int probe(int x) { volatile int v = x; return v * 7 + 1; }
// clang-format on
constexpr uint32_t kProbeLine = __LINE__ - 2;
}  // namespace dwarf_test_ns

namespace {

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  REQUIRE(n > 0);
  return std::string(buf, size_t(n));
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}

// (file offset, size) of each .debug_* section of an ELF file.
std::vector<std::pair<uint64_t, uint64_t>> debug_sections(const std::string& path) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  REQUIRE(elf_version(EV_CURRENT) != EV_NONE);
  int fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  Elf* e = elf_begin(fd, ELF_C_READ, nullptr);
  REQUIRE(e != nullptr);
  size_t shstrndx = 0;
  REQUIRE(elf_getshdrstrndx(e, &shstrndx) == 0);
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(e, scn)) != nullptr;) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(e, shstrndx, sh.sh_name);
    if (name && std::string(name).rfind(".debug_", 0) == 0) out.push_back({sh.sh_offset, sh.sh_size});
  }
  elf_end(e);
  close(fd);
  return out;
}

}  // namespace

TEST_CASE("DWARF lines: a frame of this binary gets its source file and line") {
  std::string bytes;
  uint32_t id = 0;
  {
    TraceWriter w;
    REQUIRE(w.open_memory(&bytes));
    StackInterner in(w);
    // A return address one byte past the function's first instruction: the symboliser looks up
    // the byte before it, the entry.
    uint64_t pcs[] = {reinterpret_cast<uint64_t>(dwarf_test_ns::probe) + 1};
    id = in.intern(pcs, 1, [](uint64_t) { return false; });
    REQUIRE(w.close(0, trace::kEndClean));
  }
  TraceReader r;
  std::string err;
  REQUIRE(r.open_memory(bytes, "mem", &err));
  StackTable table;
  r.read([&](const Record& rec) { table.absorb(rec, r); });
  Symbolizer sym;
  std::vector<SymFrame> frames = sym.stack(table, id);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "dwarf_test_ns::probe(int)");
  CHECK(frames[0].line == dwarf_test_ns::kProbeLine);
  const std::string tail = "/test/unit/dwarf_lines_test.cpp";
  REQUIRE(frames[0].file.size() > tail.size());
  CHECK(frames[0].file[0] == '/');  // joined to the unit's compilation directory
  CHECK(frames[0].file.compare(frames[0].file.size() - tail.size(), tail.size(), tail) == 0);
  std::string line = std::to_string(dwarf_test_ns::kProbeLine);
  CHECK(site_text(frames[0]) == "dwarf_lines_test.cpp:" + line + " in dwarf_test_ns::probe(int)");
  std::string text = frame_text(frames[0]);
  CHECK(text.rfind("dwarf_lines_test.cpp:" + line + " in dwarf_test_ns::probe(int) (", 0) == 0);
  CHECK(text.find("+0x") != std::string::npos);
  CHECK(sym.problems().empty());
}

TEST_CASE("DWARF lines: a file without DWARF gives none, and its frames keep module+offset") {
  char tmpl[] = "/tmp/cutrace_dwarf_XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  write_all(tmpl, "not an ELF file\n");
  DwarfLines d;
  std::string why;
  CHECK_FALSE(d.open(tmpl, &why));
  CHECK(!why.empty());
  std::string file;
  uint32_t line = 0;
  CHECK_FALSE(d.lookup(0x1000, &file, &line));
  DwarfLines none;
  CHECK_FALSE(none.open("/nonexistent/cutrace_dwarf", &why));
  CHECK(why.find("cannot open") == 0);
  SymFrame f;
  f.function = "main";
  f.module = "/bin/app";
  f.offset = 0x10;
  CHECK(frame_text(f) == "main (app+0x10)");
  CHECK(site_text(f) == "main (app+0x10)");
  unlink(tmpl);
}

TEST_CASE("DWARF lines: overwritten or cut DWARF sections give no crash") {
  std::string self = self_path();
  std::string orig = read_all(self);
  REQUIRE(orig.size() > 4096);
  auto sections = debug_sections(self);
  REQUIRE(!sections.empty());
  DwarfLines good;
  std::string why;
  REQUIRE_MESSAGE(good.open(self, &why), why);
  uint64_t probe = 0;
  {
    std::vector<ElfSymbol> syms;
    std::string build_id;
    REQUIRE(read_elf_symbols(self, &syms, &build_id, &why));
    for (const ElfSymbol& s : syms)
      if (s.name == "_ZN13dwarf_test_ns5probeEi") probe = s.addr;
    REQUIRE(probe != 0);
  }
  std::string file;
  uint32_t line = 0;
  REQUIRE(good.lookup(probe, &file, &line));
  CHECK(line == dwarf_test_ns::kProbeLine);

  char tmpl[] = "/tmp/cutrace_dwarf_XXXXXX";
  int fd = mkstemp(tmpl);
  REQUIRE(fd >= 0);
  close(fd);
  std::mt19937_64 rng(26);
  for (int round = 0; round < 6; ++round) {
    std::string bad = orig;
    if (round < 4) {
      // Random bytes over a stretch of every DWARF section (header and beyond).
      for (auto [off, size] : sections) {
        uint64_t start = round % 2 ? off + (rng() % (size ? size : 1)) : off;
        uint64_t n = std::min<uint64_t>(size - (start - off), 4096u << round);
        for (uint64_t k = 0; k < n && start + k < bad.size(); ++k) bad[start + k] = char(rng());
      }
    } else {
      // Cut short inside the DWARF (round 4: the first section's middle; 5: the last's).
      auto [off, size] = round == 4 ? sections.front() : sections.back();
      bad.resize(off + size / 2);
    }
    write_all(tmpl, bad);
    DwarfLines d;
    if (d.open(tmpl, &why)) {
      for (uint64_t a = probe > 4096 ? probe - 4096 : 0; a < probe + 4096; a += 61) d.lookup(a, &file, &line);
      d.lookup(probe, &file, &line);
    }
    CHECK(d.ranges() <= DwarfLines::kMaxRanges);
  }
  unlink(tmpl);
}
