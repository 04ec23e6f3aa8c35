// cpp-httplib's server, made safe to leave running (httplib 0.11, Debian 12, does the parsing,
// routing and responses):
// - A request costs at most `max_request_bytes` of memory: each connection is read through a
//   stream that fails past that budget (request line + headers + body; httplib caps the request
//   line and each header line at 8 KiB, but not the number of header lines nor a chunked body),
//   and httplib then answers 400 and the connection is closed.
// - Idle or slow clients hold no worker: one gate thread holds every open connection (poll) and
//   reads what each sends, without blocking, until a whole request head (and its short body) is
//   in; only then does one of `workers` threads run the request. A connection must deliver its
//   request head within `head_timeout_ms` of opening (or of its previous answer) and is closed
//   otherwise; at most `max_connections` are kept (the one nearest its deadline goes first).
#pragma once
#include <cstddef>
#include <memory>

#include <httplib.h>

namespace cutrace::serve {

struct ServerLimits {
  size_t max_request_bytes = 64 * 1024;
  size_t workers = 8;
  size_t max_connections = 512;
  int head_timeout_ms = 10000;  // a connection's request head, from its opening or last answer
};

class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(const ServerLimits& limits);
  ~BoundedServer() override;
  // Called from a handler (pre-routing, ...): close the connection after this response instead
  // of reading another request from it (the rest of a refused body, say).
  static void close_after_response();

  class Gate;  // tools/serve/http.cpp

 private:
  friend class Gate;
  bool process_and_close_socket(socket_t sock) override;  // accept thread: to the gate
  bool serve_one(httplib::Stream& strm, bool last, bool* closed);
  int read_ms() const;
  int write_ms() const;
  size_t keep_alive_max() const { return keep_alive_max_count_; }

  ServerLimits limits_;
  std::unique_ptr<Gate> gate_;
};

}  // namespace cutrace::serve
