#include "tools/serve/auth.h"

#include <random>

namespace cutrace::serve {
namespace {

constexpr char kCookie[] = "cutrace_token";

// Compares in time independent of where the strings differ.
bool same(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

std::string cookie_value(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    size_t b = header.find_first_not_of(' ', pos);
    if (b < end && header.compare(b, name.size() + 1, name + "=") == 0)
      return header.substr(b + name.size() + 1, end - b - name.size() - 1);
    pos = end + 1;
  }
  return {};
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string new_token() {
  std::random_device rd;  // getrandom(2)
  static const char hex[] = "0123456789abcdef";
  std::string t;
  for (int i = 0; i < 6; ++i) {
    uint32_t v = rd();
    for (int k = 0; k < 8; ++k, v >>= 4) t += hex[v & 15];
  }
  return t;
}

Auth authenticate(const httplib::Request& req, const std::string& token) {
  if (req.get_param_value_count("token") == 1 && same(req.get_param_value("token"), token)) return Auth::Query;
  std::string h = req.get_header_value("Authorization");
  for (const char* scheme : {"token ", "Bearer "}) {
    std::string s(scheme);
    if (h.compare(0, s.size(), s) == 0 && same(h.substr(s.size()), token)) return Auth::Header;
  }
  for (size_t i = 0, n = req.get_header_value_count("Cookie"); i < n; ++i) {
    if (same(cookie_value(req.get_header_value("Cookie", i), kCookie), token)) return Auth::Cookie;
  }
  return Auth::None;
}

std::string token_cookie(const std::string& token) {
  return std::string(kCookie) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict";
}

bool cross_origin(const httplib::Request& req) {
  if (req.has_header("Sec-Fetch-Site")) {
    std::string site = req.get_header_value("Sec-Fetch-Site");
    if (site != "same-origin" && site != "none") return true;
  }
  if (!req.has_header("Origin")) return false;  // not from a browser page (curl, scripts)
  return req.get_header_value_count("Origin") != 1 ||
         req.get_header_value("Origin") != "http://" + req.get_header_value("Host");
}

std::string error_page(int status, const std::string& message, const std::string& hint) {
  return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cutrace serve: " +
         std::to_string(status) + "</title></head>\n<body style=\"font-family: sans-serif; margin: 2em\">\n<h1>" +
         std::to_string(status) + " " + html_escape(message) + "</h1>\n<p>" + html_escape(hint) +
         "</p>\n</body></html>\n";
}

}  // namespace cutrace::serve
