// Who may use `cutrace serve`: a request must carry the token printed in the server's URL (as
// Jupyter does), and a request that changes state must come from the server's own pages.
// - The token: `?token=T` in the URL, `Authorization: token T` (or `Bearer T`), or the cookie
//   the server sets when a page is opened with `?token=T` (HttpOnly, SameSite=Strict).
// - Same origin: a POST whose Origin is another origin or "null", or whose Sec-Fetch-Site says
//   another site, is refused (a page elsewhere cannot make the browser load or unload jobs).
#pragma once
#include <string>

#include <httplib.h>

namespace cutrace::serve {

enum class Auth { None, Query, Header, Cookie };

std::string new_token();  // 48 hex digits from the system's random source
Auth authenticate(const httplib::Request& req, const std::string& token);
std::string token_cookie(const std::string& token);  // a Set-Cookie value
bool cross_origin(const httplib::Request& req);
// A page for a browser: status, message (HTML-escaped), and what to do; no script.
std::string error_page(int status, const std::string& message, const std::string& hint);

}  // namespace cutrace::serve
