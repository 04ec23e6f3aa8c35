#include "tools/serve_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cutrace::serve {
namespace {

thread_local bool t_close_after = false;

// Waits for `events` on fd; false on timeout or error.
bool wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r > 0 && (p.revents & (events | POLLHUP | POLLERR));
}

int to_ms(time_t sec, time_t usec) { return int(sec * 1000 + usec / 1000); }

// A socket read through a small buffer, with httplib's timeouts, failing past a byte budget.
class BoundedStream : public httplib::Stream {
 public:
  BoundedStream(int sock, int read_ms, int write_ms, size_t budget)
      : sock_(sock), read_ms_(read_ms), write_ms_(write_ms), budget_(budget) {}

  void new_request() { used_ = 0; }
  bool exceeded() const { return exceeded_; }
  bool has_buffered() const { return pos_ < len_; }

  bool is_readable() const override { return pos_ < len_ || wait_for(sock_, POLLIN, read_ms_); }
  bool is_writable() const override { return wait_for(sock_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (used_ >= budget_) {
      exceeded_ = true;
      return -1;
    }
    if (size > budget_ - used_) size = budget_ - used_;
    if (pos_ == len_) {
      if (!wait_for(sock_, POLLIN, read_ms_)) return -1;
      ssize_t n;
      do {
        n = recv(sock_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = size_t(n);
    }
    size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    used_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) describe(a, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) describe(a, len, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  static void describe(const sockaddr_storage& a, socklen_t len, std::string& ip, int& port) {
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

  int sock_;
  int read_ms_, write_ms_;
  size_t budget_;
  size_t used_ = 0;
  bool exceeded_ = false;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

}  // namespace

void BoundedServer::close_after_response() { t_close_after = true; }

// httplib's keep-alive loop, with BoundedStream in place of its socket stream.
bool BoundedServer::process_and_close_socket(socket_t sock) {
  BoundedStream strm(sock, to_ms(read_timeout_sec_, read_timeout_usec_),
                     to_ms(write_timeout_sec_, write_timeout_usec_), max_request_bytes_);
  bool ret = false;
  const int idle_ms = int(keep_alive_timeout_sec_ * 1000);
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (left != keep_alive_max_count_ && !strm.has_buffered()) {
      // Wait for the next request, a slice at a time so that stop() is not held up.
      bool ready = false;
      for (int waited = 0; waited < idle_ms && is_running() && !ready; waited += 100) {
        ready = wait_for(sock, POLLIN, 100);
      }
      if (!ready) break;
    }
    strm.new_request();
    t_close_after = false;
    bool closed = false;
    ret = process_request(strm, left == 1, closed, nullptr);
    if (!ret || closed || t_close_after || strm.exceeded()) break;
  }
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ret;
}

}  // namespace cutrace::serve
