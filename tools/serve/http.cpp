#include "tools/serve/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cutrace::serve {
namespace {

thread_local bool t_close_after = false;

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

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

// A socket read through a buffer (which starts with what the gate read), with httplib's
// timeouts, failing past a byte budget.
class BoundedStream : public httplib::Stream {
 public:
  BoundedStream(int sock, int read_ms, int write_ms, size_t budget, std::string buffered)
      : sock_(sock), read_ms_(read_ms), write_ms_(write_ms), budget_(budget), in_(std::move(buffered)) {}

  bool exceeded() const { return exceeded_; }
  std::string take_buffered() { return in_.substr(pos_); }  // the next request's first bytes

  bool is_readable() const override { return pos_ < in_.size() || wait_for(sock_, POLLIN, read_ms_); }
  bool is_writable() const override { return wait_for(sock_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (used_ >= budget_) {
      exceeded_ = true;
      return -1;
    }
    if (size > budget_ - used_) size = budget_ - used_;
    if (pos_ == in_.size()) {
      if (!wait_for(sock_, POLLIN, read_ms_)) return -1;
      char buf[4096];
      ssize_t n;
      do {
        n = recv(sock_, buf, sizeof buf, MSG_DONTWAIT);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      in_.assign(buf, size_t(n));
      pos_ = 0;
    }
    size_t n = std::min(size, in_.size() - pos_);
    std::memcpy(ptr, in_.data() + pos_, n);
    pos_ += n;
    used_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = send(sock_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
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
  std::string in_;
  size_t pos_ = 0;
};

// Whether buf holds a whole request head and the body its Content-Length announces (a body over
// the budget, or chunked, is refused by the handlers before it is read: the head is enough).
bool request_ready(const std::string& buf, size_t budget) {
  size_t end = buf.find("\n\r\n");
  size_t skip = 3;
  if (size_t lf = buf.find("\n\n"); lf < end) end = lf, skip = 2;
  if (end == std::string::npos) return buf.size() >= budget;
  size_t head = end + skip;
  std::string lower(buf, 0, head);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  size_t cl = lower.find("\ncontent-length:");
  if (cl == std::string::npos || lower.find("\ntransfer-encoding:") != std::string::npos) return true;
  unsigned long long len = std::strtoull(lower.c_str() + cl + 16, nullptr, 10);
  return len > budget || buf.size() >= head + len;
}

struct Conn {
  int fd = -1;
  std::string buf;       // read, not yet handed to httplib
  int64_t deadline = 0;  // ms (now_ms): closed unless a request is ready by then
  size_t requests = 0;   // answered on this connection
};

// A TaskQueue that runs the accept loop's task (process_and_close_socket) at once, in the accept
// thread: that only hands the socket to the gate. Its shutdown stops the gate.
class InlineQueue : public httplib::TaskQueue {
 public:
  explicit InlineQueue(BoundedServer::Gate* gate) : gate_(gate) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override;

 private:
  BoundedServer::Gate* gate_;
};

}  // namespace

class BoundedServer::Gate {
 public:
  explicit Gate(BoundedServer* s) : s_(s) {}
  ~Gate() { stop(); }

  void start() {
    std::lock_guard<std::mutex> g(mu_);
    if (running_) return;
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
    running_ = true;
    stopping_ = false;
    gate_thread_ = std::thread([this] { gate_loop(); });
    for (size_t i = 0; i < s_->limits_.workers; ++i) workers_.emplace_back([this] { worker(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!running_) return;
      stopping_ = true;
    }
    wake();
    cv_.notify_all();
    if (gate_thread_.joinable()) gate_thread_.join();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    std::lock_guard<std::mutex> g(mu_);
    for (Conn& c : incoming_) ::close(c.fd);
    for (Conn& c : ready_) ::close(c.fd);
    incoming_.clear();
    ready_.clear();
    for (int& fd : wake_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
    running_ = false;
  }

  // A new connection (accept thread), or one back from a worker for its next request.
  void add(Conn c) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (stopping_ || !running_) {
        ::close(c.fd);
        return;
      }
      c.deadline = now_ms() + s_->limits_.head_timeout_ms;
      incoming_.push_back(std::move(c));
    }
    wake();
  }

 private:
  void wake() {
    if (wake_[1] >= 0) {
      char b = 1;
      (void)!::write(wake_[1], &b, 1);
    }
  }

  // Reads what the connection has sent, without blocking; false when it is to be closed.
  bool fill(Conn& c) {
    size_t budget = s_->limits_.max_request_bytes;
    char buf[4096];
    while (c.buf.size() < budget) {
      ssize_t n = recv(c.fd, buf, std::min(sizeof buf, budget - c.buf.size()), MSG_DONTWAIT);
      if (n > 0) {
        c.buf.append(buf, size_t(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      return request_ready(c.buf, budget);  // the peer closed (or failed): answer what came
    }
    return true;
  }

  void gate_loop() {
    std::vector<Conn> conns;
    std::vector<pollfd> fds;
    const size_t budget = s_->limits_.max_request_bytes;
    for (;;) {
      {
        std::lock_guard<std::mutex> g(mu_);
        if (stopping_) break;
        for (Conn& c : incoming_) conns.push_back(std::move(c));
        incoming_.clear();
      }
      // Over the bound: the connections nearest their deadline go first.
      if (conns.size() > s_->limits_.max_connections) {
        std::sort(conns.begin(), conns.end(), [](const Conn& a, const Conn& b) { return a.deadline > b.deadline; });
        while (conns.size() > s_->limits_.max_connections) {
          ::close(conns.back().fd);
          conns.pop_back();
        }
      }
      // Hand over what is ready (a connection back from a worker may already hold its next
      // request); close what ran past its deadline.
      int64_t now = now_ms(), next = now + 1000;
      std::vector<Conn> keep;
      for (Conn& c : conns) {
        if (request_ready(c.buf, budget)) {
          std::lock_guard<std::mutex> g(mu_);
          ready_.push_back(std::move(c));
          cv_.notify_one();
        } else if (c.deadline <= now) {
          ::close(c.fd);
        } else {
          next = std::min(next, c.deadline);
          keep.push_back(std::move(c));
        }
      }
      conns.swap(keep);
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      for (const Conn& c : conns) fds.push_back(pollfd{c.fd, POLLIN, 0});
      int r = poll(fds.data(), fds.size(), int(std::max<int64_t>(0, next - now)));
      if (r < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (r <= 0) continue;
      if (fds[0].revents) {
        char b[64];
        while (::read(wake_[0], b, sizeof b) > 0) {}
      }
      keep.clear();
      for (size_t i = 0; i < conns.size(); ++i) {
        if (fds[i + 1].revents && !fill(conns[i])) {
          ::close(conns[i].fd);
          continue;
        }
        keep.push_back(std::move(conns[i]));
      }
      conns.swap(keep);
    }
    for (Conn& c : conns) ::close(c.fd);
  }

  void worker() {
    for (;;) {
      Conn c;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return stopping_ || !ready_.empty(); });
        if (stopping_) return;
        c = std::move(ready_.front());
        ready_.pop_front();
      }
      BoundedStream strm(c.fd, s_->read_ms(), s_->write_ms(), s_->limits_.max_request_bytes, std::move(c.buf));
      bool last = ++c.requests >= s_->keep_alive_max();
      bool closed = false;
      t_close_after = false;
      bool ok = s_->serve_one(strm, last, &closed);
      if (!ok || closed || last || t_close_after || strm.exceeded()) {
        shutdown(c.fd, SHUT_RDWR);
        ::close(c.fd);
        continue;
      }
      c.buf = strm.take_buffered();
      add(std::move(c));
    }
  }

  BoundedServer* s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Conn> incoming_;
  std::deque<Conn> ready_;
  bool running_ = false, stopping_ = false;
  int wake_[2] = {-1, -1};
  std::thread gate_thread_;
  std::vector<std::thread> workers_;
};

namespace {
void InlineQueue::shutdown() { gate_->stop(); }
}  // namespace

BoundedServer::BoundedServer(const ServerLimits& limits) : limits_(limits), gate_(new Gate(this)) {
  new_task_queue = [this] {
    gate_->start();
    return new InlineQueue(gate_.get());
  };
}

BoundedServer::~BoundedServer() { gate_->stop(); }

void BoundedServer::close_after_response() { t_close_after = true; }

bool BoundedServer::process_and_close_socket(socket_t sock) {
  Conn c;
  c.fd = sock;
  gate_->add(std::move(c));
  return true;
}

bool BoundedServer::serve_one(httplib::Stream& strm, bool last, bool* closed) {
  return process_request(strm, last, *closed, nullptr);
}

int BoundedServer::read_ms() const { return to_ms(read_timeout_sec_, read_timeout_usec_); }
int BoundedServer::write_ms() const { return to_ms(write_timeout_sec_, write_timeout_usec_); }

}  // namespace cutrace::serve
