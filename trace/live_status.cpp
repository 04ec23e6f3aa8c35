#include "trace/live_status.h"
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "trace/safe_file.h"

namespace cutrace {

std::string live_status_path(const std::string& dir, int64_t pid) {
  return dir + "/" + kLiveStatusPrefix + std::to_string(pid);
}

std::string format_live_status(const LiveStatus& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "pid %lld\nrank %lld\nstarted_ns %lld\nupdated_ns %lld\nrecords %llu\nops_in_flight %llu\n"
                "dropped %llu\nbytes %llu\ncapturing %d\nfinishing %d\n",
                (long long)s.pid, (long long)s.rank, (long long)s.started_ns, (long long)s.updated_ns,
                (unsigned long long)s.records, (unsigned long long)s.ops_in_flight, (unsigned long long)s.dropped,
                (unsigned long long)s.bytes, s.capturing ? 1 : 0, s.finishing ? 1 : 0);
  std::string out = buf;
  // Host and path last: the rest of their line, whatever it holds but a newline.
  auto line = [&](const char* key, const std::string& v) {
    out += key;
    out += ' ';
    for (char c : v) out += c == '\n' ? '?' : c;
    out += '\n';
  };
  line("host", s.host);
  line("trace", s.trace);
  return out;
}

bool parse_live_status(const std::string& text, LiveStatus* out) {
  LiveStatus s;
  bool pid = false, updated = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a line without its newline: torn
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    size_t sp = line.find(' ');
    if (sp == std::string::npos) continue;
    std::string key = line.substr(0, sp), v = line.substr(sp + 1);
    const char* c = v.c_str();
    if (key == "pid") s.pid = std::strtoll(c, nullptr, 10), pid = s.pid > 0;
    else if (key == "rank") s.rank = std::strtoll(c, nullptr, 10);
    else if (key == "started_ns") s.started_ns = std::strtoll(c, nullptr, 10);
    else if (key == "updated_ns") s.updated_ns = std::strtoll(c, nullptr, 10), updated = s.updated_ns > 0;
    else if (key == "records") s.records = std::strtoull(c, nullptr, 10);
    else if (key == "ops_in_flight") s.ops_in_flight = std::strtoull(c, nullptr, 10);
    else if (key == "dropped") s.dropped = std::strtoull(c, nullptr, 10);
    else if (key == "bytes") s.bytes = std::strtoull(c, nullptr, 10);
    else if (key == "capturing") s.capturing = v == "1";
    else if (key == "finishing") s.finishing = v == "1";
    else if (key == "host") s.host = v;
    else if (key == "trace") s.trace = v;
  }
  if (!pid || !updated) return false;
  *out = s;
  return true;
}

bool write_live_status(const std::string& dir, const LiveStatus& s) {
  std::string path = live_status_path(dir, s.pid), tmp = path + ".tmp";
  std::string text = format_live_status(s);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
  ok = close(fd) == 0 && ok;
  if (ok && rename(tmp.c_str(), path.c_str()) == 0) return true;
  unlink(tmp.c_str());
  return false;
}

std::vector<LiveStatus> read_live_statuses(const std::string& dir) {
  std::vector<LiveStatus> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  const size_t plen = std::strlen(kLiveStatusPrefix);
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, plen, kLiveStatusPrefix) != 0 ||
        name.find_first_not_of("0123456789", plen) != std::string::npos || name.size() == plen)
      continue;
    int fd = open_regular((dir + "/" + name).c_str(), kSafeNoFollow);
    if (fd < 0) continue;
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    LiveStatus s;
    if (n > 0 && parse_live_status(std::string(buf, size_t(n)), &s)) out.push_back(std::move(s));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const LiveStatus& a, const LiveStatus& b) { return a.pid < b.pid; });
  return out;
}

}  // namespace cutrace
