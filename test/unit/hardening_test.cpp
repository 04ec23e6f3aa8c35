// Hostile inputs at the level of the helpers that guard against them: opening a file named by a
// directory or a trace (trace/safe_file.h), tables by an id from a trace (tools/common/id_table.h),
// names printed to a terminal (tools::printable, tools::quote). The e2e tests of
// test/e2e/hardening_checks.py drive the same cases through the programs.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "test/unit/temp_dir.h"
#include "tools/common/format_util.h"
#include "tools/common/id_table.h"
#include "trace/safe_file.h"

using namespace cutrace;

TEST_CASE("open_regular: a FIFO, a socket, a directory or a symlink is refused without blocking") {
  cutrace_test::TempDir d("cutrace_safe");
  std::string file = d.path + "/file", fifo = d.path + "/fifo", link = d.path + "/link", sock = d.path + "/sock";
  std::ofstream(file) << "start";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a plain open() would block here
  REQUIRE(symlink(file.c_str(), link.c_str()) == 0);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", sock.c_str());
  REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);

  struct stat st {};
  int fd = open_regular(file.c_str(), kSafeNoFollow | kSafeOwnUser, &st);
  REQUIRE(fd >= 0);
  CHECK(st.st_size == 5);
  CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
  close(fd);
  auto refused = [](const std::string& p, unsigned opts) {
    errno = 0;
    int f = open_regular(p.c_str(), opts);
    if (f >= 0) close(f);
    return f < 0 ? errno : 0;
  };
  CHECK(refused(fifo, 0) == EINVAL);
  CHECK(std::string(open_regular_error(EINVAL)) == "not a regular file");
  CHECK(refused(d.path, 0) == EINVAL);
  CHECK(refused(sock, 0) != 0);
  CHECK(std::string(open_regular_error(refused(sock, 0))) == "not a regular file");
  CHECK(refused(link, kSafeNoFollow) == ELOOP);
  CHECK(refused(link, 0) == 0);  // followed when the caller allows it
  CHECK(refused(d.path + "/missing", 0) == ENOENT);
  close(s);
}

TEST_CASE("IdTable: ids beyond the dense bound cost an entry, not a vector to them") {
  IdTable<int64_t, 16> t(-1);
  t[3] = 30;
  t[1u << 30] = 7;
  t[0xFFFFFFFFu] = 8;
  CHECK(t[3] == 30);
  CHECK(t[2] == -1);
  CHECK(t[1u << 30] == 7);
  CHECK(t[0xFFFFFFFFu] == 8);
  CHECK(t[(1u << 30) + 1] == -1);
  int64_t& far = t[1u << 30];
  for (uint32_t i = 0; i < 16; ++i) t[i] = i;  // growing the dense part leaves far entries in place
  CHECK(far == 7);
}

TEST_CASE("printable: control characters and bytes that are not UTF-8 are escaped, UTF-8 text kept") {
  using tools::printable;
  CHECK(printable("plain name<1>") == "plain name<1>");
  CHECK(printable("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(printable("row\nforged\r") == "row\\x0aforged\\x0d");
  CHECK(printable(std::string("nul\0x", 5)) == "nul\\x00x");
  CHECK(printable("del\x7f") == "del\\x7f");
  CHECK(printable("csi\xc2\x9b"
                  "31m") == "csi\\u009b31m");  // C1 in UTF-8
  CHECK(printable("raw\x9b") == "raw\\x9b");   // a lone byte
  CHECK(printable("bad\xff\xfe end") == "bad\\xff\\xfe end");
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");           // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(printable("cut \xe2\x82") == "cut \\xe2\\x82");   // a sequence cut short
  CHECK(printable("\xc3\xa9t\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80") ==
        "\xc3\xa9t\xc3\xa9 \xe2\x80\xa8 \xf0\x9f\x98\x80");
  CHECK(tools::quote("say \"hi\"\\\x1b\xc2\x85") == "\"say \\\"hi\\\"\\\\\\x1b\\u0085\"");
}

TEST_CASE("a table cell holding control characters stays on its row") {
  tools::Table t({{"Name", tools::Align::Left}, {"Count", tools::Align::Right}});
  t.row({"k\nforged 999", "5"});
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  t.print(f);
  fclose(f);
  std::string out(buf, len);
  free(buf);
  CHECK(out == "  Name             Count\n  ---------------  -----\n  k\\x0aforged 999      5\n");
}
