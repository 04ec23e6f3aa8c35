// `cutrace report`'s self-contained page: web/index.html with its stylesheet and scripts inlined
// and both JSON documents embedded (tools/report_data.h). The assets come from the binary
// (tools/dev/embed_web.py generates them at build time from web/).
#include <string>

#include "tools/report_data.h"

namespace cutrace::report {

bool report_documents(const std::string& job_path, std::string* dashboard, std::string* timeline,
                      std::string* err);  // tools/report_data.cpp

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
  // The JSON documents escape '<' inside strings (tools/report_data.cpp), so no "</script>" can
  // end these elements early; the scripts were checked for "</script" when embedded.
  std::string data = "<script type=\"application/json\" id=\"cutrace-dashboard\">" + dashboard +
                     "</script>\n<script type=\"application/json\" id=\"cutrace-timeline\">" + timeline +
                     "</script>";
  bool ok = replace(page, "<link rel=\"stylesheet\" href=\"style.css\">",
                    "<style>\n" + std::string(web_asset("style.css")) + "</style>") &&
            replace(page, "<script src=\"chart.umd.js\"></script>",
                    "<script>\n" + std::string(web_asset("chart.umd.js")) + "</script>") &&
            replace(page, "<script src=\"app.js\"></script>",
                    "<script>\n" + std::string(web_asset("app.js")) + "</script>") &&
            replace(page, "<!--cutrace-data-->", data);
  if (!ok) {
    *err = "the embedded web/index.html lacks an asset or the data marker (build problem)";
    return false;
  }
  *out = std::move(page);
  return true;
}

}  // namespace cutrace::report
