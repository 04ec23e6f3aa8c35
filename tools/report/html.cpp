// `cutrace report`'s self-contained page: web/index.html with its stylesheet and scripts inlined
// and both JSON documents embedded (tools/report/data.h). The assets come from the binary
// (tools/dev/embed_web.py generates them at build time from web/).
#include <string>
#include <string_view>

#include "tools/report/data.h"

namespace cutrace::report {

bool report_documents(const std::string& job_path, std::string* dashboard, std::string* timeline, std::string* err,
                      std::vector<std::string>* unreadable);  // tools/report/data.cpp

namespace {

// Replaces the one occurrence of `what` in `s`; false when it is missing.
bool replace(std::string& s, const std::string& what, const std::string& with) {
  size_t at = s.find(what);
  if (at == std::string::npos) return false;
  s.replace(at, what.size(), with);
  return true;
}

// web/<page> with its stylesheet and scripts inlined and `data` (script elements) in its place.
bool inline_page(const std::string& page_name, const std::string& data, std::string* out, std::string* err) {
  std::string page(web_asset(page_name));
  bool ok = !page.empty() && replace(page, "<link rel=\"stylesheet\" href=\"style.css\">",
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
    *err = "the embedded web/" + page_name + " lacks an asset or the data marker (build problem)";
    return false;
  }
  *out = std::move(page);
  return true;
}

}  // namespace

bool report_html(const std::string& job_path, std::string* out, std::string* err,
                 std::vector<std::string>* unreadable) {
  std::string dashboard, timeline;
  if (!report_documents(job_path, &dashboard, &timeline, err, unreadable)) return false;
  // The JSON documents escape '<' inside strings (tools/report/data.cpp), so no "</script>" can
  // end these elements early; the scripts were checked for "</script" when embedded.
  std::string data = "<script type=\"application/json\" id=\"cutrace-dashboard\">" + dashboard +
                     "</script>\n<script type=\"application/json\" id=\"cutrace-timeline\">" + timeline + "</script>";
  return inline_page("index.html", data, out, err);
}

bool diff_html(std::string diff_json, std::string* out, std::string* err) {
  // '<' occurs only inside JSON strings: as \u003c no "</script>" in a name can end the element.
  std::string escaped;
  escaped.reserve(diff_json.size());
  for (char c : diff_json) {
    if (c == '<') escaped += "\\u003c";
    else escaped += c;
  }
  return inline_page("diff.html", "<script type=\"application/json\" id=\"cutrace-diff\">" + escaped + "</script>", out,
                     err);
}

}  // namespace cutrace::report
