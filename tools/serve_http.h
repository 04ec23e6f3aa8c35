// cpp-httplib's server with a bound on what one request may send. httplib 0.11 (Debian 12) caps
// the request line and each header line at 8 KiB, but not the number of header lines nor a
// chunked body: a client could make it buffer any amount. BoundedServer reads each connection
// through a stream that fails once a request has sent more than `max_request_bytes` (request
// line + headers + body), so a request costs at most that much memory; httplib then answers 400
// and the connection is closed. Everything else (parsing, routing, responses) is httplib's.
#pragma once
#include <cstddef>

#include <httplib.h>

namespace cutrace::serve {

class BoundedServer : public httplib::Server {
 public:
  explicit BoundedServer(size_t max_request_bytes) : max_request_bytes_(max_request_bytes) {}
  // Called from a handler (pre-routing, ...): close the connection after this response instead
  // of reading another request from it (the rest of a refused body, say).
  static void close_after_response();

 private:
  bool process_and_close_socket(socket_t sock) override;
  size_t max_request_bytes_;
};

}  // namespace cutrace::serve
