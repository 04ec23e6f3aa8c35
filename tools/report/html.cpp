// `cutrace report`'s self-contained page: web/index.html with its stylesheet and scripts inlined
// and both JSON documents embedded (tools/report/data.h). The assets come from the binary
// (tools/dev/embed_web.py generates them at build time from web/).
#include <string>
#include <string_view>

#include "tools/report/data.h"

namespace cutrace::report {

bool report_documents(const std::string& job_path, std::string* dashboard, std::string* timeline,
                      std::string* err);  // tools/report/data.cpp

namespace {

// Replaces the one occurrence of `what` in `s`; false when it is missing.
bool replace(std::string& s, const std::string& what, const std::string& with) {
  size_t at = s.find(what);
  if (at == std::string::npos) return false;
  s.replace(at, what.size(), with);
  return true;
}

}  // namespace

bool report_html(const std::string& job_path, std::string* out, std::string* err) {
  std::string dashboard, timeline;
  if (!report_documents(job_path, &dashboard, &timeline, err)) return false;
  std::string page(web_asset("index.html"));
  // The JSON documents escape '<' inside strings (tools/report/data.cpp), so no "</script>" can
  // end these elements early; the scripts were checked for "</script" when embedded.
  std::string data = "<script type=\"application/json\" id=\"cutrace-dashboard\">" + dashboard +
                     "</script>\n<script type=\"application/json\" id=\"cutrace-timeline\">" + timeline +
                     "</script>";
  bool ok = replace(page, "<link rel=\"stylesheet\" href=\"style.css\">",
                    "<style>\n" + std::string(web_asset("style.css")) + "</style>");
  // Every <script src="NAME"></script> becomes the asset NAME inline.
  const std::string open = "<script src=\"", close = "\"></script>";
  for (size_t at = page.find(open); ok && at != std::string::npos; at = page.find(open, at)) {
    size_t end = page.find(close, at);
    std::string name = end == std::string::npos ? "" : page.substr(at + open.size(), end - at - open.size());
    std::string_view js = web_asset(name);
    if (js.empty()) {
      ok = false;
      break;
    }
    std::string inl = "<script>\n" + std::string(js) + "\n</script>";
    page.replace(at, end + close.size() - at, inl);
    at += inl.size();
  }
  ok = ok && replace(page, "<!--cutrace-data-->", data);
  if (!ok) {
    *err = "the embedded web/index.html lacks an asset or the data marker (build problem)";
    return false;
  }
  *out = std::move(page);
  return true;
}

}  // namespace cutrace::report
