// cutrace serve DIR [--port N] [--host ADDR] [--max-loaded N]
// A local web server over a directory of recorded jobs (tools/serve/job_dir.h): the job list page, and
// per job the report page (tools/report/data.h) whose timeline is fetched a piece at a time.
// cpp-httplib does the HTTP. Nothing is read outside DIR: a request names a job by its opaque
// id, looked up among the jobs found under DIR, never by a path; no command is ever run.
// docs/REPORT.md ("cutrace serve") lists the routes and the limits.
#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <string>

#include <httplib.h>
#include <CLI/CLI.hpp>

#include "tools/cmd/commands.h"
#include "tools/common/format_util.h"
#include "tools/report/data.h"
#include "tools/serve/auth.h"
#include "tools/serve/http.h"
#include "tools/serve/job_dir.h"
#include "tools/serve/jobs.h"

namespace {

using cutrace::serve::Reply;

struct Options {
  std::string dir;
  std::string host = "127.0.0.1";
  int port = 8642;
  size_t max_loaded = 4;
  bool verbose = false;
};

// Limits. cpp-httplib 0.11 (Debian 12) also caps the request line and each header line at 8 KiB:
// longer ones are answered 414 / 400 without reaching a handler.
constexpr size_t kMaxRequestBytes = 64 * 1024;  // request line + headers + body (serve_http.h)
constexpr size_t kMaxBody = 4096;               // no route takes a body
constexpr size_t kMaxHeaders = 64;              // header lines per request
constexpr int kMaxWidthPx = 16384;              // timeline pieces: level of detail is required

const char* kSecurityHeaders[][2] = {
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"X-Frame-Options", "DENY"},
    {"Cross-Origin-Resource-Policy", "same-origin"},
    {"Content-Security-Policy",
     "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
     "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
     "frame-ancestors 'none'"},
};

httplib::Server* g_server = nullptr;
void stop_server(int) {
  if (g_server) g_server->stop();
}

bool is_loopback(const std::string& host) {
  in_addr a4{};
  in6_addr a6{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return host == "localhost";
}

void send(httplib::Response& res, const Reply& r) {
  res.status = r.status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(r.body, "application/json; charset=utf-8");
}

void send_asset(httplib::Response& res, const std::string& name) {
  std::string_view body = cutrace::report::web_asset(name);
  if (body.empty()) {
    send(res, cutrace::serve::error_reply(404, "not found"));
    return;
  }
  const char* type = "text/plain; charset=utf-8";
  auto ends = [&](const char* s) {
    std::string suf(s);
    return name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (ends(".html")) type = "text/html; charset=utf-8";
  else if (ends(".js")) type = "text/javascript; charset=utf-8";
  else if (ends(".css")) type = "text/css; charset=utf-8";
  res.set_content(std::string(body), type);
}

// Query parameter `key` as int64 into *out (left alone when absent); false when malformed.
bool int_param(const httplib::Request& req, const char* key, int64_t* out) {
  if (!req.has_param(key)) return true;
  return cutrace::serve::parse_int64(req.get_param_value(key), out);
}

bool parse_filter(const httplib::Request& req, cutrace::jobs::Filter* f, std::string* why) {
  f->name = req.get_param_value("name");
  if (f->name.size() > 256) return *why = "name filter too long", false;
  std::string st = req.get_param_value("status");
  size_t pos = 0;
  while (pos < st.size()) {
    size_t comma = st.find(',', pos);
    if (comma == std::string::npos) comma = st.size();
    cutrace::jobs::Status s;
    if (!cutrace::jobs::parse_status(st.substr(pos, comma - pos), &s))
      return *why = "status must be running, stopping, completed, failed or stopped (comma-separated)", false;
    f->status.push_back(s);
    pos = comma + 1;
  }
  // from/to: Unix time in milliseconds (what the page's date inputs give), both inclusive.
  int64_t from_ms = INT64_MIN / 1'000'000, to_ms = INT64_MAX / 1'000'000;
  if (!int_param(req, "from", &from_ms) || !int_param(req, "to", &to_ms))
    return *why = "from and to must be integers (Unix time in ms)", false;
  if (from_ms < INT64_MIN / 1'000'000 || to_ms > INT64_MAX / 1'000'000) return *why = "from/to out of range", false;
  f->from_ns = from_ms * 1'000'000;
  f->to_ns = to_ms * 1'000'000 + (to_ms < INT64_MAX / 1'000'000 ? 999'999 : 0);
  return true;
}

bool parse_piece(const httplib::Request& req, cutrace::report::TimelineQuery* q, std::string* why) {
  int64_t px = 1024;
  if (!int_param(req, "t0", &q->t0_ns) || !int_param(req, "t1", &q->t1_ns) || !int_param(req, "px", &px))
    return *why = "t0, t1 (ns) and px must be integers", false;
  if (px < 1 || px > kMaxWidthPx) return *why = "px must be in 1.." + std::to_string(kMaxWidthPx), false;
  if (q->t1_ns <= q->t0_ns) return *why = "t1 must be greater than t0", false;
  q->width_px = int(px);
  return true;
}

void install_routes(httplib::Server& svr, cutrace::serve::JobCache& cache, const Options& o, int* bound_port,
                    const std::string& token) {
  const std::string id = "([0-9a-f]{16})";  // jobs::job_id(): anything else is a 404
  svr.set_pre_routing_handler([&o, bound_port, &token](const httplib::Request& req, httplib::Response& res) {
    // Runs before httplib reads a body. No route takes one: refuse chunked bodies (httplib 0.11
    // does not bound those) and any longer than kMaxBody, and close the connection instead of
    // reading what follows.
    auto refuse = [&res](int status, const char* why) {
      send(res, cutrace::serve::error_reply(status, why));
      res.set_header("Connection", "close");
      cutrace::serve::BoundedServer::close_after_response();
      return httplib::Server::HandlerResponse::Handled;
    };
    if (req.headers.size() > kMaxHeaders) return refuse(431, "too many header lines");
    if (req.has_header("Transfer-Encoding")) return refuse(411, "chunked bodies are not accepted");
    if (req.has_header("Content-Length")) {
      int64_t len = -1;
      if (req.get_header_value_count("Content-Length") != 1 ||
          !cutrace::serve::parse_int64(req.get_header_value("Content-Length"), &len) || len < 0)
        return refuse(400, "bad Content-Length");
      if (uint64_t(len) > kMaxBody) return refuse(413, "body too large");
    }
    // Bound to loopback: only requests addressed to loopback names, so that a web page elsewhere
    // cannot read the jobs through DNS rebinding.
    if (is_loopback(o.host)) {
      std::string host = req.get_header_value("Host");
      std::string port = ":" + std::to_string(*bound_port);
      if (host != "127.0.0.1" + port && host != "localhost" + port && host != "[::1]" + port && host != o.host + port) {
        return refuse(421, "unexpected Host header");
      }
    }
    namespace sv = cutrace::serve;
    if (req.path == "/favicon.ico") return httplib::Server::HandlerResponse::Unhandled;
    bool api = req.path.rfind("/api/", 0) == 0, page = req.method == "GET" && !api;
    sv::Auth auth = sv::authenticate(req, token);
    if (auth == sv::Auth::None && !page)
      return refuse(401, "the token is missing or wrong: use the URL cutrace serve printed");
    if (auth == sv::Auth::None) {
      res.status = 401;
      res.set_content(
          sv::error_page(401, "the token is missing or wrong",
                         "Open the address that cutrace serve printed when it started (it ends in ?token=...)."),
          "text/html; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method != "GET" && req.method != "HEAD" && sv::cross_origin(req))
      return refuse(403, "refused: the request comes from a page of another origin");
    if (auth == sv::Auth::Query && page) {
      // The printed address: the cookie keeps the token for the pages' requests, and the address
      // bar (history, bookmarks) loses it.
      res.set_header("Set-Cookie", sv::token_cookie(token));
      res.set_redirect(req.path, 303);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  svr.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    for (auto& h : kSecurityHeaders) res.set_header(h[0], h[1]);
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {  // never echo the request back
      res.set_content("{\"error\":\"" + std::to_string(res.status) + "\"}", "application/json");
    }
    for (auto& h : kSecurityHeaders) res.set_header(h[0], h[1]);
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send(res, cutrace::serve::error_reply(500, "internal error"));
  });

  // The job list page and its assets.
  svr.Get("/", [](const httplib::Request&, httplib::Response& res) { send_asset(res, "jobs.html"); });
  svr.Get("/(jobs\\.js|jobs\\.css)",
          [](const httplib::Request& req, httplib::Response& res) { send_asset(res, req.matches[1]); });
  svr.Get("/favicon.ico", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  svr.Get("/api/jobs", [&cache](const httplib::Request& req, httplib::Response& res) {
    cutrace::jobs::Filter f;
    std::string why;
    send(res, parse_filter(req, &f, &why) ? cache.list(f) : cutrace::serve::error_reply(400, why));
  });
  // POST routes take no body. As content-reader handlers, httplib leaves the body unread (a POST
  // without Content-Length would otherwise wait for the read timeout); the connection is closed
  // after the answer so that no unread byte is taken for the next request.
  auto post = [&svr](const std::string& pattern, std::function<Reply(const std::string&)> act) {
    svr.Post(pattern, [act](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader&) {
      cutrace::serve::BoundedServer::close_after_response();
      res.set_header("Connection", "close");
      send(res, act(req.matches[1]));
    });
  };
  post("/api/jobs/" + id + "/load", [&cache](const std::string& job) { return cache.load(job); });
  post("/api/jobs/" + id + "/unload", [&cache](const std::string& job) { return cache.unload(job); });

  // One job: the report page fetches dashboard.json and timeline.json relative to its URL.
  auto dashboard = [&cache](const httplib::Request& req, httplib::Response& res) {
    send(res, cache.dashboard(req.matches[1]));
  };
  auto timeline = [&cache](const httplib::Request& req, httplib::Response& res) {
    cutrace::report::TimelineQuery q;
    std::string why;
    send(res, parse_piece(req, &q, &why) ? cache.timeline(req.matches[1], q) : cutrace::serve::error_reply(400, why));
  };
  svr.Get("/api/jobs/" + id + "/dashboard", dashboard);
  svr.Get("/api/jobs/" + id + "/timeline", timeline);
  svr.Get("/job/" + id + "/dashboard\\.json", dashboard);
  svr.Get("/job/" + id + "/timeline\\.json", timeline);
  svr.Get("/job/" + id, [](const httplib::Request& req, httplib::Response& res) {
    res.set_redirect("/job/" + std::string(req.matches[1]) + "/");
  });
  svr.Get("/job/" + id + "/", [&cache](const httplib::Request& req, httplib::Response& res) {
    if (!cache.exists(req.matches[1])) {
      res.status = 404;
      return res.set_content(cutrace::serve::error_page(404, "no such job", "Back to the job list: /"),
                             "text/html; charset=utf-8");
    }
    // The report page, plus web/pieces.js (it fetches the timeline a piece at a time) and
    // web/served.js (back to the list, unload).
    std::string page(cutrace::report::web_asset("index.html"));
    const std::string app = "<script src=\"app.js\"></script>";
    size_t at = page.find(app);
    if (at == std::string::npos) return send(res, cutrace::serve::error_reply(500, "page without app.js"));
    page.insert(at, "<script src=\"pieces.js\"></script>\n<script src=\"served.js\"></script>\n");
    res.set_content(page, "text/html; charset=utf-8");
  });
  // Two jobs compared (`cutrace diff`): the diff page, which fetches diff.json beside it.
  const std::string pair = "/compare/" + id + "/" + id;
  svr.Get(pair + "/diff\\.json", [&cache](const httplib::Request& req, httplib::Response& res) {
    send(res, cache.compare(req.matches[1], req.matches[2]));
  });
  svr.Get(pair + "/", [&cache](const httplib::Request& req, httplib::Response& res) {
    if (!cache.exists(req.matches[1]) || !cache.exists(req.matches[2])) {
      res.status = 404;
      return res.set_content(cutrace::serve::error_page(404, "no such job", "Back to the job list: /"),
                             "text/html; charset=utf-8");
    }
    send_asset(res, "diff.html");
  });
  svr.Get(pair + "/([a-z]+(?:\\.umd)?\\.(?:js|css))",
          [](const httplib::Request& req, httplib::Response& res) { send_asset(res, req.matches[3]); });
  svr.Get("/job/" + id + "/([a-z]+(?:\\.umd)?\\.(?:js|css))",
          [](const httplib::Request& req, httplib::Response& res) { send_asset(res, req.matches[2]); });
}

int run_serve(const Options& o) {
  cutrace::jobs::Scanner scanner;
  std::string err;
  if (!scanner.open(o.dir, &err)) {
    fprintf(stderr, "cutrace serve: %s\n", err.c_str());
    return 2;
  }
  cutrace::serve::JobCache cache(&scanner, o.max_loaded);
  cutrace::serve::ServerLimits limits;
  limits.max_request_bytes = kMaxRequestBytes;
  cutrace::serve::BoundedServer svr(limits);
  svr.set_payload_max_length(kMaxBody);
  svr.set_read_timeout(5);  // a body, once its request head is in (the gate waits for heads)
  svr.set_write_timeout(10);
  if (o.verbose) {
    svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
      fprintf(stderr, "cutrace serve: %d %s %zu bytes\n", res.status, cutrace::tools::printable(req.method).c_str(),
              res.body.size());
    });
  }
  int port = 0;
  const std::string token = cutrace::serve::new_token();
  install_routes(svr, cache, o, &port, token);
  if (o.port == 0) {
    port = svr.bind_to_any_port(o.host);
  } else {
    port = svr.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (port <= 0) {
    fprintf(stderr, "cutrace serve: cannot listen on %s:%d\n", o.host.c_str(), o.port);
    return 2;
  }
  if (!is_loopback(o.host)) {
    fprintf(stderr,
            "cutrace serve: warning: listening on %s: anyone who can reach this host can "
            "read the traces under %s\n",
            o.host.c_str(), scanner.root().c_str());
  }
  std::string shown = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  printf("cutrace serve: http://%s:%d/?token=%s serving %s\n", shown.c_str(), port, token.c_str(),
         cutrace::tools::printable(scanner.root()).c_str());
  fflush(stdout);
  g_server = &svr;
  signal(SIGINT, stop_server);
  signal(SIGTERM, stop_server);
  bool ok = svr.listen_after_bind();
  g_server = nullptr;
  return ok ? 0 : 1;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Web server over a directory of recorded jobs: list, dashboard, timeline");
  cmd->add_option("dir", o->dir, "Directory of jobs (each a directory of *.cutrace files)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--port,-p", o->port, "Port (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--host", o->host, "Address to listen on (default loopback only; anything else exposes the traces)")
      ->capture_default_str();
  cmd->add_option("--max-loaded", o->max_loaded, "Jobs kept loaded at once (least recently used dropped)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_flag("--verbose,-v", o->verbose, "Log every request on stderr");
  cmd->callback([o] {
    int rc = run_serve(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}
